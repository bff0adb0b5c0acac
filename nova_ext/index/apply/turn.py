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
"""One applier of pending marks at a time, across processes: a turn.

Each list request applies the marks it finds pending before it reads the
index (``nova_ext.instance_list.catch_up``), and the indexer's worker
applies them in the background. Every nova-api worker process that lists
while a change is pending would re-read the same instances from their
cells and write them into the index, each on its own: with writes running
and every worker busy, as many times as nova-api has workers. Under a
turn, the others wait for the one applying, then find the marks gone.

The turn is a lock of the index's own database, held on a connection of
its own: MySQL's ``GET_LOCK`` (named for the index's database, since its
names are the server's), PostgreSQL's transaction-level advisory lock;
for SQLite, whose processes all share the one host of its file, a lock
file beside the database file. tooz's locks were not used: its MySQL lock
connects anew for each lock and waits in whole seconds, a second being
ten times the catch-up it would save.

A turn only saves work: any number of processes may apply the same marks
at once, as they did without it, and each answer stays exact. So whoever
waits longer than its ``wait`` for the turn, or whose database cannot
give one (it is down; a Galera cluster, which does not support
``GET_LOCK``), applies the marks itself.
"""

import contextlib
import hashlib
import threading
import time

from oslo_concurrency import lockutils
from oslo_log import log as logging
import sqlalchemy as sa

from nova_ext import direct_reads
from nova_ext.index import lock_waits
from nova_ext.index import sqlite

LOG = logging.getLogger(__name__)

#: PostgreSQL's advisory lock key (a bigint) for the turn; advisory lock
#: keys are the database's, so one key serves every index database.
PG_KEY = int.from_bytes(hashlib.sha256(b'nova_ext.turn').digest()[:8],
                        'big', signed=True)

#: Seconds between two tries of a waiter for SQLite's lock file, at most.
FILE_POLL = 0.01

_LOCK = threading.Lock()
#: {index URL: threading.Lock}: the process's own turn, before the others'.
_LOCAL = {}
#: The kinds of failure already logged as a warning by this process.
_WARNED = set()


def _local(engine):
    key = str(engine.url)
    with _LOCK:
        return _LOCAL.setdefault(key, threading.Lock())


class Held(object):
    """A turn asked for: whether it was had, and where to read under it."""

    def __init__(self, engine, had, conn=None):
        self.engine = engine
        #: Whether this thread holds the turn.
        self.had = had
        self._conn = conn

    @contextlib.contextmanager
    def reading(self):
        """A connection to read the index on while the turn is held.

        The turn's own where it has one (MySQL, PostgreSQL): a checkout
        of the pool costs two round trips more (its ping, the rollback
        that returns it), taken while the others wait for the turn. Only
        reads. MySQL's lock is the session's, on a connection in
        autocommit: each read is a transaction of its own, which ends as
        it returns, and with it the metadata locks of the tables it read,
        for which another session's ``LOCK TABLES`` or ``ALTER TABLE``
        would otherwise wait until the turn ends. PostgreSQL's lock is the
        transaction's, which is not to be ended: its reads' locks conflict
        only with ``ACCESS EXCLUSIVE`` (an ``ALTER TABLE``), which waits
        for the turn.
        """
        if self._conn is not None:
            yield self._conn
            return
        with self.engine.connect() as conn:
            yield conn


@contextlib.contextmanager
def taken(engine, wait):
    """``with taken(engine, wait) as had``: the turn, if had in time.

    :param wait: the seconds to wait for it, at most.
    :yields: whether this thread holds the turn; False if another held it
        for ``wait`` or the database could not give it. Either way the
        caller applies what it finds pending.
    """
    with held(engine, wait) as turn:
        yield turn.had


@contextlib.contextmanager
def held(engine, wait):
    """``with held(engine, wait) as turn``: :func:`taken`'s :class:`Held`."""
    # Threads of one process wait here: a MySQL lock excludes them as
    # well, but SQLite's lock file is the process's own (fcntl).
    start = time.monotonic()
    local = _local(engine)
    if not local.acquire(timeout=max(0.0, wait)):
        yield Held(engine, False)
        return
    try:
        left = max(0.0, wait - (time.monotonic() - start))
        dialect = engine.dialect.name
        if dialect == 'mysql':
            turn = _mysql(engine, left)
        elif dialect == 'postgresql':
            turn = _postgresql(engine, left)
        elif dialect == 'sqlite':
            turn = _sqlite(engine, left)
        else:
            turn = _nothing()
        with turn as (had, conn):
            yield Held(engine, had, conn)
    finally:
        local.release()


@contextlib.contextmanager
def _nothing():
    yield False, None


def _not_given(engine, error):
    """Log once per process and kind of failure why no turn was given."""
    kind = (engine.dialect.name, type(error).__name__)
    if kind in _WARNED:
        LOG.debug('nova_ext: no turn to apply pending changes: %s', error)
        return
    _WARNED.add(kind)
    LOG.warning('nova_ext: the index database gave no turn to apply pending '
                'changes (%s); until it does, each process applies them on '
                'its own, which is exact but repeats the work', error)


def mysql_name(database):
    """The turn's ``GET_LOCK`` name for an index database (64 at most)."""
    digest = hashlib.sha256((database or '').encode('utf-8')).hexdigest()
    return 'nova_ext_turn_%s' % digest[:32]


@contextlib.contextmanager
def _on_connection(engine, take, release):
    """The turn, held on a connection of its own: ``(had, connection)``.

    ``take()`` gives ``(connection, whether the turn was had)``, or
    raises if the database gave no connection or no answer;
    ``release(conn)`` ends the turn. The connection is given only while
    the turn is had.
    """
    try:
        conn, had = take()
    except Exception as e:
        _not_given(engine, e)
        yield False, None
        return
    try:
        if not had:
            yield False, None
            return
        try:
            yield True, conn
        finally:
            release(conn)
    finally:
        conn.close()


_GET_LOCK = sa.text('SELECT GET_LOCK(:name, :wait)')
_RELEASE_LOCK = sa.text('SELECT RELEASE_LOCK(:name)')


def _mysql(engine, wait):
    """The turn on a connection of nova_ext's own, in autocommit.

    ``GET_LOCK``, the reads under it and ``RELEASE_LOCK`` are then a
    round trip each: no ping as the connection is taken, no commit after
    each, no rollback as it is given back (``direct_reads.connection``).
    """
    name = mysql_name(engine.url.database)

    def take():
        conn, got = _locked(engine, name, wait)
        # 0: another held it for ``wait``; NULL: an error of the lock.
        return conn, got == 1

    def release(conn):
        try:
            conn.execute(_RELEASE_LOCK, {'name': name})
        except Exception:
            # The lock is the session's: closing it releases it.
            conn.invalidate()
    return _on_connection(engine, take, release)


def _locked(engine, name, wait):
    """``(connection, GET_LOCK's answer)``.

    A kept connection that the server dropped since (a restart) is found
    so by this first statement, and replaced by a new one, once.
    """
    for last in (False, True):
        conn = direct_reads.connection(engine)
        try:
            return conn, conn.execute(
                _GET_LOCK, {'name': name, 'wait': wait}).scalar()
        except Exception as e:
            # Whatever the lock became, it goes with the session.
            conn.invalidate()
            conn.close()
            if last or not getattr(e, 'connection_invalidated', False):
                raise


def _postgresql(engine, wait):
    # The lock ends with the transaction, whatever becomes of it.
    def take():
        conn = engine.connect()
        try:
            conn.begin()
            with lock_waits.bounded(conn, wait):
                conn.execute(sa.text('SELECT pg_advisory_xact_lock(:key)'),
                             {'key': PG_KEY})
        except Exception as e:
            if not lock_waits.timed_out(e):
                _not_given(engine, e)
            _end(conn)
            return conn, False
        return conn, True
    return _on_connection(engine, take, _end)


def _end(conn):
    try:
        conn.rollback()
    except Exception:
        conn.invalidate()


@contextlib.contextmanager
def _sqlite(engine, wait):
    path = sqlite.path_of(str(engine.url))
    if path is None:
        # In memory: the database is this process's alone.
        yield False, None
        return
    lock = lockutils.InterProcessLock(path + '-turn')
    try:
        got = lock.acquire(blocking=True, timeout=wait, delay=FILE_POLL,
                           max_delay=FILE_POLL)
    except Exception as e:
        _not_given(engine, e)
        yield False, None
        return
    if not got:
        yield False, None
        return
    try:
        yield True, None
    finally:
        lock.release()
