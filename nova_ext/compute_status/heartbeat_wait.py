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
"""Judges a compute's heartbeat after a status change, as a watcher would.

A ``service.update`` consumer sees a service once, when its status
changes. Whether the compute is alive it cannot tell from that one look
without a timestamp, and a timestamp is stamped by the clock of the host
that wrote it (the cell conductor's) while the servicegroup API compares it
with the clock of the host that asks: a nova-api host whose clock is
behind would take back the down trait of a compute that died long ago.

So the consumer judges by the watcher's rule (``heartbeat``) and, while
that rule does not know yet, looks at the service again every ``poll``
seconds, on its own thread, until it does: the down trait goes once the
heartbeat counter moves (within one ``[DEFAULT]report_interval`` for a
live compute), and comes (or stays) once the counter has stood still for
``[DEFAULT]service_down_time``.
"""

import os
import threading
import time

from nova import context as nova_context
from oslo_log import log as logging

from nova_ext.compute_status import engine

LOG = logging.getLogger(__name__)

#: Seconds between two looks at a service whose heartbeat is not known
#: yet: one small read of its row a second, for at most a window.
POLL = 1.0


class HeartbeatWait(object):
    """Follows computes' heartbeats until the rule knows; applies it.

    :param trait_engine: the ``TraitEngine`` that writes placement.
    :param tracker: a ``heartbeat.HeartbeatTracker``: the rule, and what it
        has seen of every service (its memory outlives a wait).
    :param poll: seconds between two looks at a waiting service.
    """

    def __init__(self, trait_engine, tracker, poll=POLL):
        self._engine = trait_engine
        self._tracker = tracker
        self._poll = poll
        #: host -> (its cell mapping, when to give up on it), for the
        #: services not known yet.
        self._waiting = {}
        self._cond = threading.Condition()
        self._sync_lock = threading.Lock()
        self._pid = None
        self._thread = None
        self._stopped = False
        #: Looks at waiting services (the engine counts its writes).
        self.looks = 0

    def sync(self, cell, host, leave=None):
        """Apply a compute's status; follow it while the rule does not know.

        :param cell: the service's ``CellMapping``.
        :param leave: ``(service) -> traits`` that this first write leaves
            as they are; the service is then followed, and written in
            full once a look's answer is known.
        :returns: the heartbeat answer applied (True, False or None).
        """
        # Serialized with the looks of the wait's thread: both write
        # through the engine's report client, whose provider cache is not
        # theirs to share at once. The row is read once the lock is held,
        # so that what is written is not older than another writer's last
        # write (Nova's compute syncs the disabled trait itself).
        with self._sync_lock:
            service = self._read(cell, host)
            if service is None:
                return None
            left = leave(service) if leave else frozenset()
            with self._cond:
                up = self._tracker(service)
                if not self._stopped and (
                        left or (up is None and not service.forced_down)):
                    # The rule knows within a window of looks; only looks
                    # that keep failing outlast two.
                    self._waiting[host] = (
                        cell, time.monotonic() + 2 * self._tracker.down_time)
                    self._ensure_thread()
                    self._cond.notify_all()
                else:
                    # A forced-down flag decides while it is set; an
                    # answer ends a wait begun before it.
                    self._waiting.pop(host, None)
            self._write(cell, service, up, left)
        return up

    def stop(self):
        """Follow no service any more; the thread ends."""
        with self._cond:
            self._stopped = True
            self._waiting.clear()
            self._cond.notify_all()

    def pending(self):
        """Hosts whose heartbeat is not known yet, or not yet applied."""
        with self._cond:
            return set(self._waiting)

    def _ensure_thread(self):
        # A forked worker (uwsgi) inherits the parent's object but not
        # its thread.
        if self._pid != os.getpid() or not self._thread.is_alive():
            self._pid = os.getpid()
            self._thread = threading.Thread(
                target=self._run, name='nova-ext-heartbeat-wait',
                daemon=True)
            self._thread.start()

    def _run(self):
        while True:
            with self._cond:
                while not self._waiting and not self._stopped:
                    self._cond.wait()
                self._cond.wait(self._poll)
                if self._stopped:
                    return
                waiting = dict(self._waiting)
            for host, entry in waiting.items():
                if time.monotonic() > entry[1]:
                    with self._cond:
                        if self._waiting.get(host) is entry:
                            del self._waiting[host]
                    LOG.warning('nova_ext compute status: gave up following '
                                'the heartbeat of host %s; the watcher '
                                'judges it', host)
                    continue
                try:
                    self._look(host, entry)
                except Exception:
                    # Nobody else hears of it on this thread: the next
                    # look tries again, and the watcher's sweeps write
                    # what this could not.
                    LOG.warning('nova_ext compute status: following the '
                                'heartbeat of host %s failed', host,
                                exc_info=True)

    def _look(self, host, entry):
        cell = entry[0]
        with self._sync_lock:
            service = self._read(cell, host)
            with self._cond:
                if self._waiting.get(host) is not entry:
                    # Answered, or followed anew, by the consumer.
                    return
                self.looks += 1
                up = None if service is None else self._tracker(service)
            # A forced-down flag decides while it is set: written as it is,
            # like any answer of the rule.
            done = service is None or service.forced_down or up is not None
            if done and service is not None:
                self._write(cell, service, up)
            if done:
                with self._cond:
                    del self._waiting[host]

    def _read(self, cell, host):
        ctxt = nova_context.get_admin_context()
        with nova_context.target_cell(ctxt, cell) as cctxt:
            return engine.read_service(cctxt, host)

    def _write(self, cell, service, up, leave=frozenset()):
        ctxt = nova_context.get_admin_context()
        with nova_context.target_cell(ctxt, cell) as cctxt:
            self._engine.sync_service(cctxt, service, up, leave=leave)
