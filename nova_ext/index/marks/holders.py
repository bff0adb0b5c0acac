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
counts (:class:`Watch`): a count that has not moved for ``holder_timeout``
by the watcher's own monotonic clock is a dead holder's, whose row the
watcher deletes, renewing the marks it held, so that they are re-read by a
read that begins after the holder died. No host's clock is compared with
another's.

A holder that finds its row gone (taken for dead while it stalled) takes a
new name: the holds of the old one do not count any more.
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
_LEASE = _WATCH = None


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
        #: Called after each heartbeat the index took.
        self.on_beat = None

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
        # wait for another (see capture.hold).
        try:
            with db.begin_write(engine, timeout, cooperative) as conn:
                conn.execute(sa.insert(HOLDERS).values(
                    holder=name, host=socket.gethostname(), pid=self.pid,
                    beats=0, started_at=time.time()))
        except (db_exc.DBDuplicateEntry, sa.exc.IntegrityError):
            pass  # another thread of this process recorded it
        with self._lock:
            if self._name == name:
                self._recorded = url
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, daemon=True,
                    name='nova-ext-index-holder')
                self._thread.start()
        return name

    def _exit(self):
        """At a clean exit: no holds of this process are in flight."""
        with self._lock:
            name, url = self._name, self._recorded
        if url is None or url != db.connection_url(self.conf) or (
                os.getpid() != self.pid):
            return
        # No beat after the row is gone: it would take itself for dead.
        self._stop.set()
        try:
            release(db.get_engine(self.conf), name)
        except Exception as e:  # noqa: the watchers release it later
            LOG.debug('nova_ext index: holder %s not released at exit '
                      '(%s: %s)', name, type(e).__name__, e)

    def beat(self):
        """Count this holder's beats up; False if it was taken for dead."""
        with self._lock:
            name, url = self._name, self._recorded
        if url is None or url != db.connection_url(self.conf):
            return True
        with db.begin_write(db.get_engine(self.conf),
                            self.conf.nova_ext_index.holder_timeout / 2,
                            ) as conn:
            counted = conn.execute(sa.update(HOLDERS).where(
                HOLDERS.c.holder == name).values(
                beats=HOLDERS.c.beats + 1)).rowcount
        if counted:
            return True
        with self._lock:
            if self._name == name:
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

    def _run(self):
        failing = False
        while not self._stop.wait(
                self.conf.nova_ext_index.holder_heartbeat_interval):
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
            if self.on_beat is not None:
                self.on_beat()

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)


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
            atexit.register(_LEASE._exit)
        return _LEASE


def get_watch(conf):
    """This process's :class:`Watch`, made on first use."""
    global _WATCH
    with _LOCK:
        if _WATCH is None:
            _WATCH = Watch(conf)
        return _WATCH


def reset():
    """Stop this process's heartbeat; the next hold makes a new holder."""
    global _LEASE, _WATCH
    with _LOCK:
        (lease, _LEASE), _WATCH = (_LEASE, None), None
    if lease is not None and lease.pid == os.getpid():
        lease.stop()


class Watch(object):
    """Tells dead holders by their beats, by this process's clock."""

    def __init__(self, conf):
        self.conf = conf
        self._lock = threading.Lock()
        # {holder: (beats, monotonic time they were first seen)}
        self._seen = {}
        self._due = 0.0

    def dead(self, engine, now=None):
        """The holders whose beats stood still for ``holder_timeout``.

        ``[(holder, host, pid, beats)]``; the holders table is read at
        most once per ``holder_heartbeat_interval``.
        """
        options = self.conf.nova_ext_index
        now = time.monotonic() if now is None else now
        with self._lock:
            if now < self._due:
                return []
            self._due = now + options.holder_heartbeat_interval
        with engine.connect() as conn:
            rows = conn.execute(sa.select(
                HOLDERS.c.holder, HOLDERS.c.host, HOLDERS.c.pid,
                HOLDERS.c.beats)).all()
        dead = []
        with self._lock:
            seen = {}
            for row in rows:
                beats, since = self._seen.get(row.holder, (None, now))
                if beats != row.beats:
                    since = now
                elif now - since >= options.holder_timeout:
                    dead.append(tuple(row))
                seen[row.holder] = (row.beats, since)
            self._seen = seen
        return dead

    def settle(self, engine, now=None):
        """Release the holds of dead holders; the instances they held."""
        released = set()
        for holder, host, pid, beats in self.dead(engine, now):
            uuids = release(engine, holder, beats)
            if uuids is None:
                continue
            # A process that exits without running its atexit hooks holds
            # nothing most of the time: only lost holds are worth a warning.
            LOG.log(logging.WARNING if uuids else logging.INFO,
                    'nova_ext index: holder %s (%s, pid %s) stopped beating '
                    'for %.0f s; released its holds of %d instances, to be '
                    're-read', holder, host, pid,
                    self.conf.nova_ext_index.holder_timeout, len(uuids))
            released.update(uuids)
        return released


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
