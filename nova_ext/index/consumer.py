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
"""The ``index`` notification consumer: keeps the index true in-process.

Enabled by listing ``index`` in ``[nova_ext_notifications]consumers`` of a
Nova process whose ``[oslo_messaging_notifications]driver`` includes
``nova_ext``. It hands each instance change to this process's
:class:`Marker`, which records changes in the index's pending table in
batches and wakes the index worker. A mark that fails is kept and retried,
never dropped; but the in-process driver has no acknowledgement to give,
and can drop notifications under overload (it counts them), and what is
buffered in memory dies with the process. Deployments that must not rely
on that run ``nova-ext-indexer`` on the message bus, and the reconcile pass
of either.
"""

import threading
import time

from oslo_log import log as logging

from nova_ext import conf as ext_conf
from nova_ext.index import db
from nova_ext.index import events
from nova_ext.index import pending
from nova_ext.index import service_changes
from nova_ext.index import worker
from nova_ext.notifications import base
from nova_ext.notifications import dispatcher

LOG = logging.getLogger(__name__)

CONF = ext_conf.CONF

#: Longest a consumer waits for its change to be committed (see consume()).
COMMIT_WAIT = 5.0
#: Seconds between two attempts to record changes, doubling up to the max.
BACKOFF, MAX_BACKOFF = 0.05, 5.0

_LOCK = threading.Lock()
_WORKER = None
_MARKER = None


def get_worker(conf):
    """This process's index worker, started on first use."""
    global _WORKER
    with _LOCK:
        # A forked child (uwsgi, oslo.service) inherits the object but not
        # its thread: start one of its own.
        if _WORKER is None or not _WORKER.alive:
            _WORKER = worker.Worker(conf)
        return _WORKER


def get_marker(conf):
    """This process's :class:`Marker`, started on first use.

    Its commits wake this process's index worker only where the in-process
    consumer runs; a process that only captures its writes (a conductor)
    leaves the marks to the indexer and to the list requests.
    """
    global _MARKER
    with _LOCK:
        # As get_worker(); what the parent had buffered is its own to
        # record.
        if _MARKER is None or not _MARKER.alive:
            wake = None
            if 'index' in conf.nova_ext_notifications.consumers:
                wake = lambda: get_worker(conf).wake()  # noqa: E731
            _MARKER = Marker(conf, wake=wake)
        return _MARKER


def held():
    """Changes this process has not yet recorded: ``{uuid: (first, last)}``.

    Those buffered and those of a transaction under way, which fail back
    into the buffer if it does.
    """
    with _LOCK:
        marker = _MARKER
    return {} if marker is None else marker.held()


def reset():
    """Record what is buffered, then stop the marker and the worker."""
    global _WORKER, _MARKER
    with _LOCK:
        marker, _MARKER = _MARKER, None
    if marker is not None:
        # Its last commit still wakes the worker, which must not be
        # started again for it.
        marker.stop()
    with _LOCK:
        running, _WORKER = _WORKER, None
    if running is not None:
        running.stop()


class Marker(object):
    """Records instance changes in the pending table, in batches.

    :meth:`add` buffers a change and returns at once. One thread commits
    the buffer in one transaction when it holds ``size`` instances,
    ``delay`` seconds after its oldest change, or as soon as someone waits
    for it (:meth:`wait`, :meth:`flush`), whichever comes first; the
    changes of one instance are coalesced into one mark. If the transaction
    fails, its changes go back into the buffer and are retried, with those
    that came meanwhile, after a backoff that doubles up to
    :data:`MAX_BACKOFF` seconds. The buffer holds at most one entry per
    instance, however long the index stays unwritable.
    """

    def __init__(self, conf, wake=None, size=None, delay=None):
        self.conf = conf
        self.size = size or conf.nova_ext_index.notification_batch_size
        self.delay = (conf.nova_ext_index.notification_batch_timeout
                      if delay is None else delay)
        self.wake = wake
        #: Changes committed, and transactions that failed.
        self.marked = self.failures = 0
        self._cond = threading.Condition()
        self._buffer, self._oldest = {}, None
        # {uuid: [holds, releases]} of the buffered changes (see
        # pending.mark).
        self._holds = {}
        # The changes of the transaction under way.
        self._inflight = {}
        # The uuids of the buffered and of the in-flight changes that no
        # held mark in the index covers (see held()).
        self._uncovered, self._inflight_uncovered = set(), set()
        # Tickets: the changes added so far, and how many of the first of
        # them are committed.
        self._added = self._committed = 0
        self._urgent = self._failing = self._stop = False
        # A wait timed out: later ones return at once until a commit.
        self._stalled = False
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='nova-ext-index-marker')
        self._thread.start()

    def add(self, uuid, when):
        """Buffer a change; returns a ticket for :meth:`wait`."""
        return self.add_all([uuid], when)

    def add_all(self, uuids, when, holds=0, releases=0, covered=False):
        """Buffer changes of ``uuids`` at ``when``; a ticket for all.

        :param holds: holds each mark takes, :param releases: holds it
            gives back (``pending.mark``).
        :param covered: whether the index already holds a mark of each of
            them, which lists re-read until it is released: then these
            changes do not count in :meth:`held`.
        """
        with self._cond:
            pending.coalesce([(uuid, when) for uuid in uuids],
                             into=self._buffer)
            if not covered:
                self._uncovered.update(uuids)
            if holds or releases:
                _add_holds(self._holds, {u: (holds, releases)
                                         for u in uuids})
            self._added += 1
            if self._oldest is None:
                self._oldest = time.monotonic()
                self._cond.notify_all()
            elif len(self._buffer) >= self.size:
                self._cond.notify_all()
            return self._added

    def wait(self, ticket, timeout=None):
        """Commit now, and wait until the change of ``ticket`` is committed.

        Returns whether it is: False at once while changes cannot be
        recorded (they are kept and retried), and after ``timeout`` s;
        after such a timeout, False at once until a commit succeeds.
        """
        with self._cond:
            self._urge(ticket)
            self._cond.wait_for(
                lambda: (self._committed >= ticket or self._failing or
                         self._stalled), timeout)
            if self._committed < ticket and not self._failing:
                self._stalled = True
            return self._committed >= ticket

    def flush(self, timeout=None):
        """Commit now everything added so far; True once it is."""
        with self._cond:
            ticket = self._added
            self._urge(ticket)
            return self._cond.wait_for(lambda: self._committed >= ticket,
                                       timeout)

    def _urge(self, ticket):
        if self._committed < ticket:
            self._urgent = True
            self._cond.notify_all()

    @property
    def stalled(self):
        """Whether changes wait that could not be recorded in time."""
        with self._cond:
            return self._failing or self._stalled

    def stall(self):
        """Have waits return at once until the next commit succeeds."""
        with self._cond:
            self._stalled = True

    def take_back_releases(self, uuids):
        """Cancel the buffered releases of holds on ``uuids``; which were.

        A transaction that is about to write an instance whose previous
        transaction's release is still buffered keeps that hold instead of
        taking another: the index's mark stays held throughout, at no
        write. Not a release already being committed.
        """
        # The mark stays held from the first hold to the last release, so
        # a chain of such writes must not outlast pending.HOLD_EXPIRY; it
        # lasts as long as each comes within ``delay`` of the previous.
        taken = set()
        with self._cond:
            for uuid in uuids:
                counts = self._holds.get(uuid)
                if counts is not None and counts[1] > counts[0]:
                    counts[1] -= 1
                    taken.add(uuid)
        return taken

    def held(self):
        """What is not committed yet, as :func:`held` describes.

        Not the releases of holds (``covered``): the held marks make lists
        re-read those instances until the release is committed.
        """
        with self._cond:
            inflight = {u: v for u, v in self._inflight.items()
                        if u in self._inflight_uncovered}
            return _merge(inflight, {u: v for u, v in self._buffer.items()
                                     if u in self._uncovered})

    @property
    def buffered(self):
        with self._cond:
            return len(self._buffer)

    @property
    def alive(self):
        return self._thread.is_alive()

    def stop(self, timeout=10):
        """Commit what is buffered (one attempt), then stop."""
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        self._thread.join(timeout)

    def _take(self):
        """Wait for a batch, or None: stop.

        A batch is ``(changes, holds, ticket, oldest)``.
        """
        with self._cond:
            self._cond.wait_for(lambda: self._buffer or self._stop)
            if not self._buffer:
                return None
            # Let the changes that follow join this transaction.
            self._cond.wait_for(
                lambda: (self._stop or self._urgent or
                         len(self._buffer) >= self.size),
                self._oldest + self.delay - time.monotonic())
            batch = (self._buffer, self._holds, self._added, self._oldest)
            self._inflight = self._buffer
            self._inflight_uncovered = self._uncovered
            self._buffer, self._holds, self._uncovered = {}, {}, set()
            self._oldest, self._urgent = None, False
            return batch

    def _run(self):
        backoff = BACKOFF
        while True:
            batch = self._take()
            if batch is None:
                return
            changes, holds, ticket, oldest = batch
            try:
                # A short wait for another writer's lock: the batch is
                # retried anyway, and under eventlet the wait is the whole
                # process's.
                pending.mark(db.get_engine(self.conf), changes, holds,
                             timeout=self.conf.nova_ext_index.capture_timeout)
            except Exception as e:
                backoff = self._failed(changes, holds, oldest, e, backoff)
                if backoff is None:
                    return
                continue
            backoff = BACKOFF
            with self._cond:
                if self._failing:
                    LOG.info('nova_ext index records changes again')
                self._failing = self._stalled = False
                self._inflight, self._inflight_uncovered = {}, set()
                self._committed = ticket
                self.marked += len(changes)
                self._cond.notify_all()
            if self.wake is not None:
                self.wake()

    def _failed(self, changes, holds, oldest, error, backoff):
        """Put ``changes`` back; the next backoff, or None: stopping."""
        with self._cond:
            self.failures += 1
            self._inflight = {}
            self._uncovered |= self._inflight_uncovered
            self._inflight_uncovered = set()
            _merge(self._buffer, changes)
            _add_holds(self._holds, holds)
            self._oldest = min(oldest, self._oldest or oldest)
            if self._stop:
                LOG.error('nova_ext index: stopping with the changes of %d '
                          'instances not recorded (%s: %s); the reconcile '
                          'pass finds them', len(self._buffer),
                          type(error).__name__, error)
                return None
            if not self._failing:
                LOG.warning('nova_ext index cannot record changes (%s: %s); '
                            'keeping them and retrying', type(error).__name__,
                            error)
            self._failing = True
            self._cond.notify_all()
            # Woken early only to stop (one last attempt).
            self._cond.wait_for(lambda: self._stop, backoff)
        return min(backoff * 2, MAX_BACKOFF)


def _merge(into, changes):
    """Merge ``{uuid: (first, last)}`` changes into others; ``into``."""
    for uuid, (first, last) in changes.items():
        pending.coalesce([(uuid, first), (uuid, last)], into=into)
    return into


def _add_holds(into, holds):
    for uuid, (held, released) in holds.items():
        counts = into.setdefault(uuid, [0, 0])
        counts[0] += held
        counts[1] += released


def _more_queued(conf):
    """Whether the dispatcher holds notifications behind this one."""
    counts = dispatcher.get_dispatcher(conf).counts
    return counts['queued'] - counts['dispatched'] > 1


class IndexConsumer(base.Consumer):

    event_types = events.EVENT_TYPES + service_changes.EVENT_TYPES

    def __init__(self, conf=None):
        self.conf = conf or CONF

    def consume(self, notification):
        host = service_changes.host(notification.event_type,
                                    notification.payload)
        if host is not None:
            # Rare (an operator's or a driver's act), and what nova-api
            # keeps is checked against it: recorded now, not batched.
            try:
                service_changes.bump(db.get_engine(self.conf), [host])
            except Exception as e:
                LOG.warning('nova_ext index cannot record a change of the '
                            'services of host %s (%s: %s); what nova-api '
                            'keeps of them expires within '
                            'service_down_time', host, type(e).__name__, e)
            return
        change = events.change(notification.event_type,
                               notification.payload, notification.timestamp)
        if change is None:
            return
        marker = get_marker(self.conf)
        ticket = marker.add(*change)
        # With notifications queued behind this one, go on: they join the
        # batch. With none, commit now (what came meanwhile joins) and wait
        # for it: an idle process has recorded every change it was told of
        # (the dispatcher's drain(), for tests and orderly shutdown), and a
        # change waits for a batch only while others come.
        if not _more_queued(self.conf):
            marker.wait(ticket, COMMIT_WAIT)
