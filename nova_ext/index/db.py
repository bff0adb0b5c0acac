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
"""Connections to the instance index database.

The index is queried with Nova's own database API: a request context whose
database connection is the index instead of a cell. Nova's query code then
runs unchanged over the rows of every cell at once.
"""

import contextlib
import math
import os
import threading

from nova import context as nova_context
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

#: The cell uuid a context targeted at the index carries. It is no cell's
#: uuid, so nothing can mistake the index for a cell.
INDEX_CELL_UUID = '00000000-0000-0000-0000-00000000e1de'

#: The execution option of the connections of :func:`begin_write`.
WRITE = 'nova_ext_index_write'

#: SQLite's extended result code for a write refused because the
#: transaction's snapshot is stale.
SQLITE_BUSY_SNAPSHOT = 517

_LOCK = threading.Lock()
_MANAGERS = {}


def connection_url(conf):
    url = conf.nova_ext_index.connection
    if url:
        return url
    path = os.path.join(conf.state_path, 'nova_ext_index.sqlite')
    return 'sqlite:///%s' % path


#: Milliseconds an SQLite connection of the index waits for a lock.
BUSY_TIMEOUT_MS = 10000


def _sqlite_pragmas(dbapi_connection, connection_record):
    # nova-api reads while the indexer writes: WAL lets readers go on during
    # a write, and busy_timeout makes writers queue instead of failing.
    cursor = dbapi_connection.cursor()
    cursor.execute('PRAGMA busy_timeout = %d' % BUSY_TIMEOUT_MS)
    cursor.execute('PRAGMA journal_mode = WAL')
    # In WAL mode, NORMAL syncs at checkpoints rather than at every commit:
    # a crash of the process loses nothing, a power loss the last commits,
    # which the reconcile pass restores (the index is a cache of the
    # cells). Every Nova write that capture marks commits to the index.
    cursor.execute('PRAGMA synchronous = NORMAL')
    cursor.close()


def _sqlite_begin(conn, cursor, statement, parameters, context, many):
    # oslo.db begins SQLite transactions itself, deferred: a transaction
    # that reads first takes a snapshot, and its first write then fails at
    # once (SQLITE_BUSY_SNAPSHOT, whatever busy_timeout says) if another
    # connection has committed meanwhile. The index's writers take the
    # write lock at BEGIN instead, waiting for it (busy_timeout) like any
    # other lock. Readers (nova-api) still begin deferred, and are never
    # serialized behind a writer. (The BEGIN is oslo.db's, rewritten here:
    # SQLAlchemy runs engine "begin" listeners in the order they were
    # registered, and oslo.db's comes first.)
    if statement == 'BEGIN' and conn.get_execution_options().get(WRITE):
        statement = 'BEGIN IMMEDIATE'
    return statement, parameters


@contextlib.contextmanager
def begin_write(engine, timeout=None):
    """``with begin_write(engine) as conn``: a transaction that writes.

    Committed on exit, rolled back on an exception, like ``engine.begin()``;
    on SQLite it holds the database's write lock from its first statement,
    so that nothing another connection commits can invalidate what it read.

    :param timeout: seconds to wait for SQLite's write lock, instead of
        BUSY_TIMEOUT_MS.
    """
    with engine.connect() as conn:
        conn.execution_options(**{WRITE: True})
        sqlite = timeout is not None and engine.dialect.name == 'sqlite'
        if sqlite:
            # On the DBAPI connection: through SQLAlchemy's, the pragma
            # would begin the transaction, deferred.
            _busy_timeout(conn, int(timeout * 1000))
        try:
            with conn.begin():
                yield conn
        finally:
            if sqlite:
                _busy_timeout(conn, BUSY_TIMEOUT_MS)


def _busy_timeout(conn, ms):
    cursor = conn.connection.dbapi_connection.cursor()
    try:
        cursor.execute('PRAGMA busy_timeout = %d' % ms)
    finally:
        cursor.close()


def write(engine, fn, attempts=3, timeout=None):
    """``fn(conn)`` in a :func:`begin_write` transaction; its result.

    Run again while it loses a race (:func:`lost_race`), up to ``attempts``
    times in all.
    """
    for attempt in range(attempts):
        try:
            with begin_write(engine, timeout) as conn:
                return fn(conn)
        except (db_exc.DBError, sa_exc.DBAPIError) as e:
            if attempt == attempts - 1 or not lost_race(e):
                raise


def stale_snapshot(error):
    """Whether SQLite refused a write for another connection's commit.

    Only a transaction not begun by :func:`begin_write` can meet this: it
    read, another connection committed (any write, to any table), and its
    write then fails at once with SQLITE_BUSY_SNAPSHOT ("database is
    locked"), which oslo.db raises as it is. Run again, it sees the commit.
    """
    return (isinstance(error, sa_exc.OperationalError) and
            getattr(error.orig, 'sqlite_errorcode', None) ==
            SQLITE_BUSY_SNAPSHOT)


def lost_race(error):
    """Whether another writer got in first: run the transaction again.

    The index's engines are oslo.db's, whose filters raise a duplicate key
    as DBDuplicateEntry and a deadlock (MySQL, PostgreSQL) as DBDeadlock; a
    plain SQLAlchemy engine raises IntegrityError; SQLite refuses a write
    after another commit (:func:`stale_snapshot`).
    """
    return (isinstance(error, (db_exc.DBDuplicateEntry, db_exc.DBDeadlock,
                               sa_exc.IntegrityError)) or
            stale_snapshot(error))


def _setup_sqlite(engine):
    sa.event.listen(engine, 'before_cursor_execute', _sqlite_begin,
                    retval=True)
    if engine.url.database in (None, '', ':memory:'):
        return
    sa.event.listen(engine, 'connect', _sqlite_pragmas)
    # oslo.db gives SQLite files a NullPool: every transaction would open
    # the file, parse the schema, set the pragmas, and on closing the last
    # connection checkpoint and delete the WAL, several times the cost of a
    # batch of marks. Keep connections instead, as SQLAlchemy does for
    # SQLite files; never make a checkout wait (max_overflow -1), as
    # NullPool never did. The new pool keeps the engine's listeners
    # (_dispatch), as Pool.recreate() does, and starts empty: each of its
    # connections gets the pragmas. oslo.db's process guard still drops a
    # connection that a forked child inherited.
    old = engine.pool
    engine.pool = sa.pool.QueuePool(
        old._creator, pool_size=5, max_overflow=-1, recycle=old._recycle,
        reset_on_return=old._reset_on_return, pre_ping=old._pre_ping,
        _dispatch=old.dispatch, dialect=old._dialect)


def _connect_timeout(url, timeout):
    seconds = max(1, int(math.ceil(timeout)))
    if url.startswith(('mysql', 'postgresql')):
        return 'connect_timeout=%d' % seconds
    return ''


def get_context_manager(conf, in_transaction=False):
    """The enginefacade transaction context of the index, one per URL.

    :param in_transaction: the one for writes made while a Nova transaction
        is open (change capture's holds): its connections do not yield to
        other greenthreads when they go back to the pool (oslo.db's
        ``thread_checkin``), since under eventlet no other greenthread may
        run while a transaction is open on a connection that others may
        share (as Nova's harness shares its in-memory cell databases).
    """
    url = connection_url(conf)
    with _LOCK:
        manager = _MANAGERS.get((url, in_transaction))
        if manager is None:
            manager = enginefacade.transaction_context()
            # nova-api must learn at once that the index is unreachable and
            # answer from Nova's path: no connection retries at start-up
            # (oslo.db's default waits 100 s), a bounded connect.
            manager.configure(connection=url, max_retries=0,
                              thread_checkin=not in_transaction,
                              connection_parameters=_connect_timeout(
                                  url, conf.nova_ext_index.query_timeout))
            engine = manager.writer.get_engine()
            if engine.dialect.name == 'sqlite':
                _setup_sqlite(engine)
            _MANAGERS[(url, in_transaction)] = manager
        return manager


def get_engine(conf, in_transaction=False):
    return get_context_manager(conf, in_transaction).writer.get_engine()


def target(ctx, conf):
    """A copy of ``ctx`` whose database is the index.

    Like ``nova.context.target_cell``, the copy is sanitized (no transaction
    or cell targeting of the caller leaks into it).
    """
    cctxt = nova_context.RequestContext.from_dict(ctx.to_dict())
    cctxt.db_connection = get_context_manager(conf)
    cctxt.mq_connection = None
    cctxt.cell_uuid = INDEX_CELL_UUID
    return cctxt


def reset():
    """Forget every engine (tests, and processes that fork)."""
    with _LOCK:
        for manager in _MANAGERS.values():
            try:
                manager.writer.get_engine().dispose()
            except Exception:  # noqa: disposal is best effort
                pass
        _MANAGERS.clear()
