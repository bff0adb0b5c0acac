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
"""A process's record of instance changes: buffered, then marked in batches.

Whatever learns of a change in a process (the in-process notification
consumer, change capture's releases and failed holds) hands it to the
process's one :class:`Batcher` (``nova_ext.index.marks.process.get_batcher``).
"""

import threading
import time

from oslo_log import log as logging

from nova_ext.index import backoff
from nova_ext.index import db
from nova_ext.index.marks import holders
from nova_ext.index.marks import pending
from nova_ext.index.marks import told as told_mod

LOG = logging.getLogger(__name__)

#: Seconds between two attempts to record changes, doubling up to the max.
BACKOFF, MAX_BACKOFF = 0.05, 5.0

#: Seconds between two prunes of the notification ids no indexer took
#: (``told.prune``), by this process's clock.
PRUNE_INTERVAL = 60.0


class Batcher(object):
    """Records instance changes in the pending table, in batches.

    :meth:`add` buffers a change and returns at once. One thread commits
    the buffer in one transaction when it holds ``size`` instances,
    ``delay`` seconds after its oldest change (``release_delay`` after its
    oldest if all it holds are releases of held marks), or as soon as
    someone waits for it (:meth:`wait`, :meth:`flush`), whichever comes
    first; the
    changes of one instance are coalesced into one mark. If the transaction
    fails, its changes go back into the buffer and are retried, with those
    that came meanwhile, after a backoff that doubles up to
    :data:`MAX_BACKOFF` seconds. The buffer holds at most one entry per
    instance, however long the index stays unwritable.
    """

    def __init__(self, conf, wake=None, size=None, delay=None,
                 release_delay=None):
        self.conf = conf
        self.size = size or conf.nova_ext_index.notification_batch_size
        self.delay = (conf.nova_ext_index.notification_batch_timeout
                      if delay is None else delay)
        # A release is safe to keep: its held mark makes lists re-read the
        # instance until it is committed. Kept longer, the next
        # transaction on the instance takes it back (take_back_releases())
        # and neither it nor that transaction's hold is written.
        self.release_delay = max(
            self.delay, conf.nova_ext_index.capture_release_delay
            if release_delay is None else release_delay)
        self.wake = wake
        #: Changes committed, and transactions that failed.
        self.marked = self.failures = 0
        self._cond = threading.Condition()
        # When the oldest buffered change came, and the oldest of those
        # that are not releases (monotonic), or None.
        self._buffer, self._oldest, self._oldest_news = {}, None, None
        # The holds of the buffered changes, a set of (uuid, holder,
        # token) (see pending.mark), and their releases by uuid: a
        # transaction takes back a release of an instance it writes
        # (take_back_releases()) without a pass over all of them.
        self._holds, self._releases = set(), {}
        # The ids of the notifications the buffered changes were made from
        # (pending.mark's told).
        self._told = set()
        # The changes of the transaction under way.
        self._inflight = {}
        # The uuids of the buffered and of the in-flight changes that no
        # held mark in the index covers (see held()).
        self._uncovered, self._inflight_uncovered = set(), set()
        # Tickets: the changes added so far, and how many of the first of
        # them are committed.
        self._added = self._committed = 0
        self._urgent = self._failing = self._stop = self._retry = False
        self._pruned = time.monotonic()
        # A wait timed out: later ones return at once until a commit.
        self._stalled = False
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='nova-ext-index-batcher')
        self._thread.start()

    def add(self, uuid, when, told=None):
        """Buffer a change; returns a ticket for :meth:`wait`.

        :param told: the id of the notification that reported it, recorded
            with its mark (``told``).
        """
        return self.add_all([uuid], when,
                            told=() if told is None else (told,))

    def add_all(self, uuids, when, holds=(), releases=(), covered=False,
                told=()):
        """Buffer changes of ``uuids`` at ``when``; a ticket for all.

        :param holds: ``(uuid, holder, token)`` of holds the marks take,
            :param releases: of holds they give back (``pending.mark``).
        :param covered: whether the index already holds a mark of each of
            them, which lists re-read until it is released: then these
            changes do not count in :meth:`held`.
        :param told: ids of the notifications that reported them.
        """
        with self._cond:
            self._told.update(told)
            pending.coalesce([(uuid, when) for uuid in uuids],
                             into=self._buffer)
            if not covered:
                self._uncovered.update(uuids)
            self._holds.update(holds)
            for key in releases:
                # A hold not recorded yet: neither is recorded.
                if key in self._holds:
                    self._holds.discard(key)
                else:
                    self._releases.setdefault(key[0], set()).add(key)
            self._added += 1
            now = time.monotonic()
            if self._oldest is None:
                self._oldest = now
                self._cond.notify_all()
            if not covered and self._oldest_news is None:
                self._oldest_news = now
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

    def take_back_releases(self, uuids, holder):
        """Cancel buffered releases of ``holder``'s holds on ``uuids``.

        A transaction that is about to write an instance whose previous
        transaction's release is still buffered keeps that hold instead of
        taking another: the index's mark stays held throughout, at no
        write. Not a release already being committed.

        :returns: ``{uuid: (holder, token)}`` of the holds taken back,
            for the transaction to release in turn.
        """
        taken = {}
        with self._cond:
            for uuid in uuids:
                keys = self._releases.get(uuid, ())
                mine = [key for key in keys if key[1] == holder]
                if mine:
                    key = min(mine)
                    keys.discard(key)
                    if not keys:
                        del self._releases[uuid]
                    taken[uuid] = key[1:]
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

    def retry(self):
        """Cut short the pause after a failed commit: try again now.

        For a process about to exit, whose changes are lost if the index
        comes back during a pause: list requests' waits (:meth:`wait`,
        :meth:`flush`) keep the backoff, so that an index that is down is
        not asked once per request.
        """
        with self._cond:
            self._retry = True
            self._cond.notify_all()

    def recorded_all(self, timeout):
        """Whether everything added so far is committed, within ``timeout``.

        For a caller that waits (``timeout`` above 0), a failed commit is
        retried at once: this is asked before each heartbeat of this
        process's holder (``holders.Lease.ready``), and its changes are
        unknown to every other process until recorded, while the pause
        after a failed commit grows to :data:`MAX_BACKOFF`. A check that
        does not wait leaves the pause as it is: the batcher's own thread
        checks so before it records its holder's row
        (``holders.Lease.ensure``), and would otherwise try again at once
        after each failure, for as long as the index refuses it, never
        pausing (under eventlet, no other greenthread would run).
        """
        if timeout:
            with self._cond:
                # The condition's lock is reentrant.
                if self._failing:
                    self.retry()
        return self.flush(timeout)

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

        A batch is ``(changes, holds, releases, told, ticket, oldest)``.
        """
        with self._cond:
            self._cond.wait_for(lambda: self._buffer or self._stop)
            if not self._buffer:
                return None
            # Let the changes that follow join this transaction.
            while not (self._stop or self._urgent or
                       len(self._buffer) >= self.size):
                left = self._due() - time.monotonic()
                if left <= 0:
                    break
                # Woken early by news, which may be due sooner.
                self._cond.wait(left)
            releases = {key for keys in self._releases.values()
                        for key in keys}
            batch = (self._buffer, self._holds, releases, self._told,
                     self._added, self._oldest)
            self._inflight = self._buffer
            self._inflight_uncovered = self._uncovered
            self._buffer, self._uncovered = {}, set()
            self._holds, self._releases = set(), {}
            self._told = set()
            self._oldest = self._oldest_news = None
            self._urgent = False
            return batch

    def _due(self):
        """When the buffer is to be committed (monotonic)."""
        due = self._oldest + self.release_delay
        if self._oldest_news is not None:
            due = min(due, self._oldest_news + self.delay)
        return due

    def _run(self):
        pause = backoff.pauses(BACKOFF, MAX_BACKOFF)
        failures = 0
        while True:
            batch = self._take()
            if batch is None:
                return
            changes, holds, releases, told, ticket, oldest = batch
            try:
                number = self._record(changes, holds, releases, told)
            except Exception as e:
                failures += 1
                if not self._failed(changes, holds, releases, told, oldest,
                                    e, pause(failures)):
                    return
                continue
            failures = 0
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
            if told:
                self._prune(number)

    def _prune(self, number):
        """Drop old notification ids, every :data:`PRUNE_INTERVAL` s."""
        now = time.monotonic()
        if now - self._pruned < PRUNE_INTERVAL:
            return
        self._pruned = now
        try:
            db.write(db.get_engine(self.conf),
                     lambda conn: told_mod.prune(conn, number))
        except Exception as e:
            # Only the table's size is at stake; tried again later.
            LOG.warning('nova_ext index could not prune the notifications '
                        'it recorded: %s', e)

    def _record(self, changes, holds, releases, told):
        engine = db.get_engine(self.conf)
        # A short wait for another writer's lock: the batch is retried
        # anyway, and under eventlet the wait is the whole process's.
        timeout = self.conf.nova_ext_index.capture_timeout
        lease = holders.get_lease(self.conf)
        name = lease.name
        if any(holder == name for _uuid, holder, _token in holds):
            lease.ensure(engine, timeout)
        return pending.mark(engine, changes, holds, releases,
                            timeout=timeout, told=told)

    def _failed(self, changes, holds, releases, told, oldest, error,
                pause):
        """Put ``changes`` back and pause; False if stopping instead."""
        with self._cond:
            self.failures += 1
            self._inflight = {}
            self._uncovered |= self._inflight_uncovered
            self._inflight_uncovered = set()
            _merge(self._buffer, changes)
            self._holds |= holds
            self._told |= told
            for key in releases:
                self._releases.setdefault(key[0], set()).add(key)
            self._oldest = min(oldest, self._oldest or oldest)
            if self._uncovered:
                self._oldest_news = min(oldest,
                                        self._oldest_news or oldest)
            if self._stop:
                LOG.error('nova_ext index: stopping with the changes of %d '
                          'instances not recorded (%s: %s); the reconcile '
                          'pass finds them', len(self._buffer),
                          type(error).__name__, error)
                return False
            if not self._failing:
                LOG.warning('nova_ext index cannot record changes (%s: %s); '
                            'keeping them and retrying', type(error).__name__,
                            error)
            self._failing = True
            self._cond.notify_all()
            # Woken early only to stop (one last attempt) or to retry.
            self._cond.wait_for(lambda: self._stop or self._retry, pause)
            self._retry = False
        return True


def _merge(into, changes):
    """Merge ``{uuid: (first, last)}`` changes into others; ``into``."""
    for uuid, (first, last) in changes.items():
        pending.coalesce([(uuid, first), (uuid, last)], into=into)
    return into
