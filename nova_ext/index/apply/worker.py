# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""The indexer's worker: applies pending marks to the index, in batches.

One thread per process. Whatever marks instances (the in-process
notification consumer, the standalone listener) wakes it; it then drains the
pending table batch by batch, so a burst of notifications costs one cell
read per batch, not one per notification. Marks it cannot apply (a cell is
down) stay pending and are retried after ``retry`` seconds; until then the
worker passes them over, so that the marks of the other cells behind them
are applied as they come. Meanwhile they stay pending: each list request
tries them itself, and a request that finds more than
``[nova_ext_index]catch_up_limit`` pending, or one it cannot read, is
Nova's.

Each process that records a change wakes its own worker, and with writes
running most find the marks applied by another by the time they look: a
worker looks before it waits for the turn (``turn``), so that the list
requests waiting for it do not wait behind workers with nothing to do.
"""

import threading
import time

from nova import context as nova_context
from oslo_log import log as logging

from nova_ext.index.apply import refresh
from nova_ext.index import db
from nova_ext.index.marks import sequence

LOG = logging.getLogger(__name__)

#: Seconds between two prunings of the index's sequence (one row a mark).
PRUNE_INTERVAL = 60.0


class Worker(object):

    def __init__(self, conf, retry=5.0, name='nova-ext-index-worker'):
        self.conf = conf
        self.retry = retry
        self.applied = 0
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._pruned = float('-inf')
        self._thread = threading.Thread(target=self._run, name=name,
                                        daemon=True)
        self._thread.start()

    def wake(self):
        self._idle.clear()
        self._wake.set()

    @property
    def alive(self):
        return self._thread.is_alive()

    def _run(self):
        ctx = nova_context.get_admin_context()
        # The uuids of the marks that failed, passed over until retry_at.
        failed, retry_at = set(), None
        failures = 0
        while not self._stop.is_set():
            self._wake.wait(self.retry if retry_at is None else
                            max(0.0, retry_at - time.monotonic()))
            self._wake.clear()
            if retry_at is not None and time.monotonic() >= retry_at:
                failed.clear()
                retry_at = None
            try:
                self._drain(ctx, failed)
            except Exception as e:
                # The marks are still pending: they are retried, and list
                # requests apply them meanwhile (up to catch_up_limit). An
                # index away for a while is told once, not every retry.
                failures += 1
                if failures == 1:
                    LOG.warning('nova_ext index worker cannot apply pending '
                                'changes (%s: %s); retrying every %g s',
                                type(e).__name__, e, self.retry,
                                exc_info=True)
                else:
                    LOG.debug('nova_ext index worker still cannot apply '
                              'pending changes (%s: %s)', type(e).__name__,
                              e)
            else:
                if failures:
                    LOG.info('nova_ext index worker applies pending changes '
                             'again, after %d failed tries', failures)
                failures = 0
            self._prune()
            if failed and retry_at is None:
                retry_at = time.monotonic() + self.retry
            if not self._wake.is_set():
                self._idle.set()

    def _drain(self, ctx, failed):
        """Apply batches until each mark left was applied or failed.

        A held mark stays after it is applied; it is applied again at the
        next wake.
        """
        done = set()
        while not self._stop.is_set():
            before = len(failed)
            applied = refresh.process_pending(ctx, self.conf, skip=failed,
                                              done=done)
            self.applied += applied
            if not applied and len(failed) == before:
                return

    def _prune(self):
        """Drop the index sequence's old numbers, every PRUNE_INTERVAL s."""
        now = time.monotonic()
        if now - self._pruned < PRUNE_INTERVAL:
            return
        self._pruned = now
        try:
            db.write(db.get_engine(self.conf), sequence.prune)
        except Exception as e:
            # Only the table's size is at stake; tried again later.
            LOG.warning('nova_ext index could not prune its sequence: %s', e)

    def wait_idle(self, timeout=None):
        """Wait until nothing is pending that the worker knows of."""
        return self._idle.wait(timeout)

    def stop(self, timeout=10):
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout)
