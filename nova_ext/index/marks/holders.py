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
"""Who holds marks, and whether it still lives.

Change capture holds an instance's mark from before a Nova transaction
writes it until after it has committed (``nova_ext.index.marks.capture``),
and a read does not remove a held mark (``pending.unmark``). A process killed
with transactions in flight (kill -9, the OOM killer, a failed host)
never releases its holds; its transactions are over all the same, the
database having rolled back what they had not committed.

So each process that holds marks is a *holder*: a row of the holders table
whose ``beats`` it counts up every ``holder_heartbeat_interval``
(:class:`Lease`), and under whose name it records each hold. A hold counts
only while its holder's row is there. Whoever re-reads marks watches the
counts (``watch``): a count that has not moved for ``holder_timeout``
by the watcher's own monotonic clock is a dead holder's, whose row the
watcher deletes, renewing the marks it held, so that they are re-read by a
read that begins after the holder died. No host's clock is compared with
another's.

A holder that finds its row gone (taken for dead while it stalled) takes a
new name: the holds of the old one do not count any more.

A heartbeat also counts the holder's ``vouches`` up where it has recorded
every change it learned of before the beat (:attr:`Lease.ready`). A write
whose changes the index could not take in time (``capture``) is known to
its own process only; the other processes serve lists from the index only
while each holder has lately vouched that it has nothing unrecorded
(``nova_ext.index.marks.witness``), and the write waits, before it goes
on, until that can no longer be said of its process (:meth:`Lease.fence`).
A holder that cannot record goes on beating without vouching: alive, its
holds count, and lists are Nova's until it has recorded.
"""

import atexit
import itertools
import os
import socket
import threading
import time

from oslo_db import exception as db_exc
from oslo_log import log as logging
from oslo_utils import uuidutils
import sqlalchemy as sa

from nova_ext.index import db
from nova_ext.index.marks import pending
from nova_ext.index import schema

LOG = logging.getLogger(__name__)

HOLDERS, HOLDS = schema.HOLDERS, schema.HOLDS

_LOCK = threading.Lock()
_LEASE = None

#: How many heartbeat intervals a vouch holds for a holder: others serve
#: lists from the index for that long after they saw it
#: (``nova_ext.index.marks.witness``), and a write that could not be
#: recorded waits that long after the last vouch (:meth:`Lease.fence`).
WINDOW = 2.0


#: Seconds between two looks of a waiting write at its changes (fence()).
FENCE_POLL = 0.05


def window(conf):
    """Seconds a heartbeat vouches that its holder recorded everything."""
    return WINDOW * conf.nova_ext_index.holder_heartbeat_interval


class Lease(object):
    """This process's holder row, and the heartbeat that keeps it."""

    def __init__(self, conf):
        self.conf = conf
        self.pid = os.getpid()
        #: Times another process took this one for dead.
        self.lost = 0
        self._lock = threading.Lock()
        self._name = uuidutils.generate_uuid()
        # The index (its URL) the name's row was recorded in, or None.
        self._recorded = None
        self._tokens = itertools.count(1)
        self._stop = threading.Event()
        self._thread = None
        #: Called before each heartbeat, with the seconds it may take:
        #: whether everything this process learned of so far is recorded.
        #: A holder that says no beats without vouching.
        self.ready = None
        # How many writes that may vouch for this holder (beats, and the
        # row's first record) are under way, from before their ready()
        # check, and when the last one that vouched ended (monotonic): see
        # fence().
        self._beats = threading.Condition()
        self._vouching = 0
        self._vouch_end = None

    @property
    def name(self):
        with self._lock:
            return self._name

    def token(self):
        """A number no other transaction of this holder has."""
        return next(self._tokens)

    def current(self, name):
        """Whether holds recorded under ``name`` count."""
        with self._lock:
            return name == self._name and self._recorded is not None

    def ensure(self, engine, timeout=None, cooperative=True):
        """The name to record holds under, its row recorded first."""
        url = db.connection_url(self.conf)
        with self._lock:
            if self._recorded == url:
                return self._name
            name = self._name
        # Not under the lock: a thread inside a Nova transaction must not
        # wait for another (see capture.hold). Recorded with a first vouch
        # where everything is recorded already: readers take a row new to
        # them for a vouch (``witness``), and need not wait for the next.
        clean = self._vouch()
        try:
            with db.begin_write(engine, timeout, cooperative) as conn:
                conn.execute(sa.insert(HOLDERS).values(
                    holder=name, host=socket.gethostname(), pid=self.pid,
                    beats=0, vouches=1 if clean else 0,
                    started_at=time.time()))
        except (db_exc.DBDuplicateEntry, sa.exc.IntegrityError):
            pass  # another thread of this process recorded it
        finally:
            # Even without a vouch, a recording counts as one for the
            # writes that wait (fence()): a reader whose last read came
            # before it lists from the index for a window after that read,
            # without knowing this holder.
            self._vouched(True)
        with self._lock:
            if self._name == name:
                self._recorded = url
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, args=(self._stop,), daemon=True,
                    name='nova-ext-index-holder')
                self._thread.start()
        return name

    def leave(self):
        """Release the row, as at a clean exit; a later hold records anew.

        At a process's exit, and once a Nova service of the process has
        stopped (oslo.service then leaves by ``os._exit``): no holds of
        the process are in flight. A row left behind would keep the lists
        of nova-api on Nova's path until it is taken for dead.
        """
        with self._lock:
            name, url = self._name, self._recorded
            if url is None or url != db.connection_url(self.conf) or (
                    os.getpid() != self.pid):
                return
            self._name = uuidutils.generate_uuid()
            self._recorded = None
            # No beat after the row is gone: it would take itself for
            # dead. The next hold starts a heartbeat of its own.
            self._stop.set()
            self._stop, self._thread = threading.Event(), None
        try:
            release(db.get_engine(self.conf), name)
        except Exception as e:  # noqa: the watchers release it later
            LOG.debug('nova_ext index: holder %s not released (%s: %s)',
                      name, type(e).__name__, e)

    def beat(self):
        """Count this holder's beats up; False if it was taken for dead.

        And its vouches, where :attr:`ready` says that everything this
        process learned of is recorded: a holder that cannot record lives
        on, and others list from the index only without it.
        """
        with self._lock:
            name, url = self._name, self._recorded
        if url is None or url != db.connection_url(self.conf):
            return True
        interval = self.conf.nova_ext_index.holder_heartbeat_interval
        clean = self._vouch(interval / 2)
        values = {'beats': HOLDERS.c.beats + 1}
        if clean:
            values['vouches'] = HOLDERS.c.vouches + 1
            # A write that fails for want of a change waits for it
            # (fence()): not longer than the interval.
            timeout = interval
        else:
            self._vouched(False)
            timeout = self.conf.nova_ext_index.holder_timeout / 2
        try:
            with db.begin_write(db.get_engine(self.conf), timeout) as conn:
                counted = conn.execute(sa.update(HOLDERS).where(
                    HOLDERS.c.holder == name).values(**values)).rowcount
        finally:
            if clean:
                self._vouched(True)
        if counted:
            return True
        with self._lock:
            if self._name != name:
                # It left meanwhile (leave()).
                return True
            self._name = uuidutils.generate_uuid()
            self._recorded = None
            self.lost += 1
        LOG.warning('nova_ext index: another process took this one (holder '
                    '%s) for dead after %.0f s without a heartbeat and '
                    'released its holds; the Nova transactions it had in '
                    'flight were not protected from then on. Is '
                    '[nova_ext_index]holder_timeout longer than this '
                    'process can stall?', name,
                    self.conf.nova_ext_index.holder_timeout)
        return False

    def _vouch(self, timeout=0.0):
        """Before a write that may vouch: whether everything is recorded.

        Counted as under way from before the check (see :meth:`fence`);
        :meth:`_vouched` must follow.
        """
        with self._beats:
            self._vouching += 1
        try:
            return self.ready is None or bool(self.ready(timeout))
        except Exception:
            self._vouched(False)
            raise

    def _vouched(self, vouching):
        """After it; ``vouching``: whether it vouched, or tried to.

        One that failed counts too: the index may have taken it.
        """
        with self._beats:
            if vouching:
                self._vouch_end = time.monotonic()
            self._vouching -= 1
            self._beats.notify_all()

    def fence(self, recorded):
        """After a write whose changes the index could not take: wait.

        Until no other process can still be serving lists from the index
        by this holder's last vouch (:data:`WINDOW` intervals after it,
        by this process's clock), or until ``recorded()``: from then on
        they see the changes' marks, or that this holder has not vouched.
        A beat under way, which may have found everything recorded before
        these changes came, counts as the last vouch, and so does the
        recording of this holder's row, vouching or not: a reader whose
        last read came before it lists from the index for as long after
        that read, unaware of this holder. Every write of a holder that
        has not vouched since waits for the same moment, so Nova is slowed
        once for each time the index cannot take its changes.

        A process whose row the index has not taken yet is unknown to the
        others, who cannot wait for it: its write waits as long from now,
        for its changes to be recorded (as they are, once another writer
        lets go of the index's lock), and then goes on.

        :param recorded: whether the index has taken the changes.
        :returns: the seconds waited.
        """
        started = time.monotonic()
        with self._beats:
            self._beats.wait_for(lambda: not self._vouching)
            end = self._vouch_end
        if not self.current(self.name):
            # Unknown to the others (its row not recorded): from now.
            end = started
        deadline = end + window(self.conf)
        while not recorded():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(left, FENCE_POLL))
        return time.monotonic() - started

    def _run(self, stop):
        failing = False
        # The first beat at once: until a holder has vouched, no other
        # process serves lists from the index (``witness``).
        first = True
        while first or not stop.wait(
                self.conf.nova_ext_index.holder_heartbeat_interval):
            first = False
            try:
                self.beat()
            except Exception as e:
                if not failing:
                    LOG.warning('nova_ext index: no heartbeat of holder %s '
                                '(%s: %s); retrying', self.name,
                                type(e).__name__, e)
                failing = True
                continue
            if failing:
                LOG.info('nova_ext index: heartbeats of holder %s again',
                         self.name)
            failing = False

    def stop(self):
        with self._lock:
            stop, thread = self._stop, self._thread
        stop.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(10)


def get_lease(conf):
    """This process's :class:`Lease`, made on first use."""
    global _LEASE
    with _LOCK:
        # A forked child (uwsgi, oslo.service) is a holder of its own.
        if _LEASE is None or _LEASE.pid != os.getpid():
            _LEASE = Lease(conf)
            # Registered now, before anything that records holds under
            # its name registers its own exit (atexit runs them last in,
            # first out): the row goes after the holds are recorded. It
            # does nothing unless the row was recorded.
            atexit.register(_LEASE.leave)
        return _LEASE


def leave():
    """Release this process's holder row, if it has one (``Lease.leave``)."""
    with _LOCK:
        lease = _LEASE
    if lease is not None:
        lease.leave()


def reset():
    """Release this process's holder, as at its exit, and stop its beats.

    The next hold makes a new holder.
    """
    global _LEASE
    with _LOCK:
        lease, _LEASE = _LEASE, None
    if lease is not None and lease.pid == os.getpid():
        lease.stop()
        lease.leave()


def release(engine, holder, beats=None):
    """Delete a holder's row and holds; the instances it held.

    Only if its count is still ``beats`` (unless None): a holder that beat
    meanwhile lives. The marks it held are renewed in the same
    transaction. None if the holder lives, or is gone already.
    """
    def attempt(conn):
        query = sa.delete(HOLDERS).where(HOLDERS.c.holder == holder)
        if beats is not None:
            query = query.where(HOLDERS.c.beats == beats)
        if not conn.execute(query).rowcount:
            return None
        uuids = {row.uuid for row in conn.execute(
            sa.select(HOLDS.c.uuid).where(HOLDS.c.holder == holder))}
        conn.execute(sa.delete(HOLDS).where(HOLDS.c.holder == holder))
        # Holds recorded under a name after its row went (a holder taken
        # for dead that had not found out yet) count for nothing either.
        conn.execute(sa.delete(HOLDS).where(~sa.exists().where(
            HOLDERS.c.holder == HOLDS.c.holder)))
        pending.renew(conn, uuids, time.time())
        return uuids
    return db.write(engine, attempt)
