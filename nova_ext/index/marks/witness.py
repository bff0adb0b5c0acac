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
"""Whether every holder lately vouched that it recorded its changes.

A Nova write whose changes the index could not take in time (its lock
busy past ``capture_timeout``, or the index unreachable from that process
alone) goes on; its changes wait in that process's memory, unknown to
every other. So a process serves a list from the index only while each
holder of the holders table (``holders``) has vouched lately: a holder's
heartbeat vouches only once everything it learned of is recorded, and a
write that could not be recorded waits, before Nova goes on, until no
vouch of its process can be called recent any more
(``holders.Lease.fence``).

"Lately" is told by this process's monotonic clock alone: the holders
table is read every quarter of ``holder_heartbeat_interval``
(:class:`Witness`), and a holder whose count of vouches differs between
two reads (a row recorded in between counts from 0) vouched after the
first of them began. That vouch holds for :data:`holders.WINDOW`
intervals from that first read on; the writer waits as long from its last
vouch by its own clock. A read holds as long: a holder recorded after the
last read that began within the window is unknown here, and counts its
recording as a vouch when its writes wait. No host's clock is compared
with another's.

The same reads keep this process's ``watch.Watch`` going, which
releases the holds of holders dead for ``holder_timeout``: a dead holder
stops lists from being served here until then.
"""

import os
import threading
import time

from oslo_log import log as logging
import sqlalchemy as sa

from nova_ext.index import db
from nova_ext.index.marks import holders
from nova_ext.index.marks import watch

LOG = logging.getLogger(__name__)

#: Reads of the holders table per heartbeat interval.
READS_PER_INTERVAL = 4

_LOCK = threading.Lock()
_WITNESS = None


class Witness(object):
    """This process's view of which holders vouched lately.

    :param clock: a monotonic clock, this process's own.
    """

    def __init__(self, conf, clock=time.monotonic):
        self.conf = conf
        self.clock = clock
        self.pid = os.getpid()
        self._lock = threading.Lock()
        # (when the last read began, {holder: vouches}), or None.
        self._last = None
        # {holder: when the read began after which it was seen to vouch}
        self._since = {}
        self._stop = threading.Event()
        self._thread = None
        self._first_read = threading.Event()

    def observe(self, engine):
        """Read the holders table once; its rows, for ``watch`` too.

        ``[(holder, host, pid, beats, vouches)]``.
        """
        began = self.clock()
        table = holders.HOLDERS
        with engine.connect() as conn:
            rows = conn.execute(sa.select(
                table.c.holder, table.c.host, table.c.pid, table.c.beats,
                table.c.vouches)).all()
        vouches = {row.holder: row.vouches for row in rows}
        with self._lock:
            if self._last is not None:
                before, seen = self._last
                for holder, count in vouches.items():
                    # A row recorded since the last read with a count
                    # was recorded vouching, or vouched since
                    # (``Lease.ensure``).
                    if seen.get(holder, 0) != count:
                        self._since[holder] = before
            self._since = {h: t for h, t in self._since.items()
                           if h in vouches}
            self._last = (began, vouches)
        return rows

    @property
    def last_read(self):
        """When the last successful read began (by ``clock``), or None."""
        with self._lock:
            return None if self._last is None else self._last[0]

    def silent(self, now=None, own=None):
        """The holders that did not vouch lately.

        A sorted list of names; None if this process has not read the
        holders table in the last window (its reads fail, or stall): a
        holder recorded since may hold changes it could not record, and
        its writes wait for the readers only as long
        (``holders.Lease.fence``).

        :param own: this process's holder name, left out: what it has not
            recorded, it knows without a vouch (``process.held``).
        """
        now = self.clock() if now is None else now
        oldest = now - holders.window(self.conf)
        with self._lock:
            if self._last is None or self._last[0] < oldest:
                return None
            return sorted(h for h in self._last[1] if h != own and
                          self._since.get(h, oldest - 1) < oldest)

    def start(self):
        """Read the table now, then every quarter heartbeat interval.

        Returns once the first read is over, whichever thread makes it:
        until then, every holder is one this process has not read.
        """
        with self._lock:
            first = self._thread is None
            if first:
                self._thread = threading.Thread(
                    target=self._run, daemon=True,
                    name='nova-ext-index-witness')
        if not first:
            # As long as the first caller may wait for the read.
            self._first_read.wait(self.conf.nova_ext_index.query_timeout)
            return
        try:
            # A table without other holders needs no vouch to be seen.
            self.observe(db.get_engine(self.conf))
        except Exception as e:  # noqa: the thread reads it again
            LOG.debug('nova_ext index: holders table not read (%s: %s)',
                      type(e).__name__, e)
        finally:
            self._first_read.set()
        self._thread.start()

    def _run(self):
        failing = False
        watching = watch.get_watch(self.conf)
        while True:
            try:
                engine = db.get_engine(self.conf)
                rows = self.observe(engine)
            except Exception as e:
                watching.unread()
                if not failing:
                    LOG.warning('nova_ext index: cannot read the holders '
                                'table (%s: %s); retrying', type(e).__name__,
                                e)
                failing = True
            else:
                if failing:
                    LOG.info('nova_ext index: holders table read again')
                failing = False
                # Dead holders are released where they are waited for, by
                # the same reads.
                try:
                    watching.settle(engine, rows=rows)
                except Exception as e:  # noqa: again at the next read
                    LOG.debug('nova_ext index: dead holders not released '
                              '(%s: %s)', type(e).__name__, e)
            interval = self.conf.nova_ext_index.holder_heartbeat_interval
            if self._stop.wait(interval / READS_PER_INTERVAL):
                return

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)


def get_witness(conf):
    """This process's :class:`Witness`, reading from first use on."""
    global _WITNESS
    with _LOCK:
        # A forked child (uwsgi) inherits the object but not its thread.
        if _WITNESS is None or _WITNESS.pid != os.getpid():
            _WITNESS = Witness(conf)
        running = _WITNESS
    running.start()
    return running


def reset():
    global _WITNESS
    with _LOCK:
        running, _WITNESS = _WITNESS, None
    if running is not None and running.pid == os.getpid():
        running.stop()
