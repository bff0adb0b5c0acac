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
"""The instance index on an SQLite file: how it is opened, locked, waited on.

SQLite is the index's embedded default. Several processes share the file
(nova-api, the indexer, nova-manage with capture), so each connection:

- opens the file without creating it: a missing index is a fault of the
  index, which nova-api answers through Nova, not a new empty database;
- is checked, each time it is taken from the pool, to still be the file at
  the configured path: a connection to a file deleted or replaced under it
  would go on reading and writing what no other process sees;
- reads in WAL mode, waiting briefly for a lock (only another connection's
  exclusive lock holds a WAL reader up), and writes holding the write lock
  from BEGIN, waiting for it by sleeping between tries, so that under
  eventlet the rest of the process runs meanwhile.
"""

import contextlib
import os
import sqlite3
import time
import urllib.parse

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

#: Milliseconds a writer waits for the write lock, unless told.
BUSY_TIMEOUT_MS = 10000
#: Milliseconds any other statement waits for a lock: a list meets another
#: connection's exclusive lock as a failure of the index, handed to Nova,
#: well within query_timeout.
READ_BUSY_TIMEOUT_MS = 500
#: Seconds a new connection waits for a lock while it is set up (oslo.db's
#: and nova_ext's pragmas), before it sets READ_BUSY_TIMEOUT_MS: Python's
#: default is 5 s, a stall of the whole process under eventlet.
CONNECT_TIMEOUT = 0.1
#: Seconds between tries for the write lock: the first, the longest.
_POLL = (0.002, 0.05)

#: SQLite's extended result code for a write refused because the
#: transaction's snapshot is stale.
SQLITE_BUSY_SNAPSHOT = 517

_FILE_KEY = 'nova_ext_index_file'


def path_of(url):
    """The file an SQLite URL names, or None (in memory)."""
    url = sa.engine.make_url(url)
    database = url.database
    if database in (None, '', ':memory:'):
        return None
    if url.query.get('uri') == 'true' and database.startswith('file:'):
        database = urllib.parse.unquote(database[len('file:'):])
    return database


def engine_url(url):
    """The URL to open ``url``'s file with, never creating it.

    A URL in SQLite's URI form is the operator's, taken as it is (add
    ``timeout`` to it: see CONNECT_TIMEOUT).
    """
    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() != 'sqlite':
        return url
    path = path_of(url)
    if path is None or parsed.query.get('uri') == 'true':
        return url
    return parsed.set(
        database='file:%s' % urllib.parse.quote(path),
        query=dict(parsed.query, mode='rw', uri='true',
                   timeout=str(CONNECT_TIMEOUT))).render_as_string(
            hide_password=False)


def create_file(url):
    """Create the empty file ``url`` names, if none: for db_sync only."""
    if sa.engine.make_url(url).get_backend_name() != 'sqlite':
        return
    path = path_of(url)
    if path is not None and not os.path.exists(path):
        # An empty file is an empty database to SQLite.
        with open(path, 'a'):
            pass


def _identity(path):
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def setup(engine, write_option):
    """Listeners and pool of an engine on the index (see the docstring).

    :param write_option: the execution option that marks the connections
        of ``db.begin_write``.
    """
    def begin_immediate(conn, cursor, statement, parameters, context, many):
        # oslo.db begins SQLite transactions itself, deferred: a
        # transaction that reads first takes a snapshot, and its first
        # write then fails at once (SQLITE_BUSY_SNAPSHOT) if another
        # connection has committed meanwhile. The index's writers take the
        # write lock at BEGIN instead. Readers (nova-api) still begin
        # deferred, and are never serialized behind a writer. (The BEGIN is
        # oslo.db's, rewritten here: SQLAlchemy runs engine "begin"
        # listeners in the order they were registered, and oslo.db's comes
        # first.)
        if (statement == 'BEGIN' and
                conn.get_execution_options().get(write_option)):
            statement = 'BEGIN IMMEDIATE'
        return statement, parameters

    sa.event.listen(engine, 'before_cursor_execute', begin_immediate,
                    retval=True)
    path = path_of(engine.url.render_as_string(hide_password=False))
    if path is None:
        return

    def connected(dbapi_connection, connection_record):
        connection_record.info[_FILE_KEY] = _identity(path)
        cursor = dbapi_connection.cursor()
        cursor.execute('PRAGMA busy_timeout = %d' % READ_BUSY_TIMEOUT_MS)
        cursor.execute('PRAGMA journal_mode = WAL')
        # In WAL mode, NORMAL syncs at checkpoints rather than at every
        # commit: a crash of the process loses nothing, a power loss the
        # last commits, which the reconcile pass restores (the index is a
        # cache of the cells).
        cursor.execute('PRAGMA synchronous = NORMAL')
        cursor.close()

    def checked_out(dbapi_connection, connection_record, proxy):
        if _identity(path) != connection_record.info.get(_FILE_KEY):
            # The pool drops this connection and opens the file again (or
            # fails to: the file is gone).
            raise sa_exc.DisconnectionError(
                'the index file %s was removed or replaced' % path)

    sa.event.listen(engine, 'connect', connected)
    sa.event.listen(engine, 'checkout', checked_out)
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


def begin_write(conn, wait, cooperative):
    """``conn``'s transaction, begun holding the write lock.

    :param wait: seconds to wait for the lock.
    :param cooperative: wait by sleeping between tries; else inside SQLite,
        which under eventlet blocks every greenthread.
    """
    return _waiting_for_lock(conn, conn.begin, wait, cooperative)


def autocommit(conn, sql, params, wait, cooperative):
    """Run one writing statement on ``conn`` outside any transaction.

    oslo.db's SQLite connections leave BEGIN to the caller, so SQLite
    commits such a statement as it runs it: the write lock is held only
    inside that one call, which needs neither the interpreter lock nor
    another round trip from Python, and a writer that waits for it waits
    for SQLite's own work only. ``conn`` must not be in a transaction.

    :param wait, cooperative: as :func:`begin_write`.
    :returns: the DB-API cursor of the statement.
    """
    dbapi_connection = conn.connection.dbapi_connection
    try:
        return _waiting_for_lock(
            conn, lambda: dbapi_connection.execute(sql, params), wait,
            cooperative)
    finally:
        busy_timeout(conn, READ_BUSY_TIMEOUT_MS)


def _waiting_for_lock(conn, attempt, wait, cooperative):
    """``attempt()``, waiting at most ``wait`` s for the write lock.

    :param cooperative: as :func:`begin_write`.
    """
    if not cooperative:
        busy_timeout(conn, int(wait * 1000))
        return attempt()
    busy_timeout(conn, 0)
    deadline = time.monotonic() + wait
    pause = _POLL[0]
    while True:
        try:
            return attempt()
        except (sa_exc.OperationalError, sqlite3.OperationalError) as e:
            left = deadline - time.monotonic()
            if 'locked' not in str(getattr(e, 'orig', e)) or left <= 0:
                raise
        time.sleep(min(pause, left))
        pause = min(pause * 2, _POLL[1])


@contextlib.contextmanager
def patient(conn):
    """Within, ``conn`` waits for locks as long as a writer does."""
    busy_timeout(conn, BUSY_TIMEOUT_MS)
    try:
        yield conn
    finally:
        busy_timeout(conn, READ_BUSY_TIMEOUT_MS)


def busy_timeout(conn, ms):
    # On the DBAPI connection: through SQLAlchemy's, the pragma would begin
    # the transaction, deferred.
    cursor = conn.connection.dbapi_connection.cursor()
    try:
        cursor.execute('PRAGMA busy_timeout = %d' % ms)
    finally:
        cursor.close()


def stale_snapshot(error):
    """Whether SQLite refused a write for another connection's commit.

    Only a transaction not begun holding the write lock can meet this: it
    read, another connection committed (any write, to any table), and its
    write then fails at once with SQLITE_BUSY_SNAPSHOT ("database is
    locked"), which oslo.db raises as it is. Run again, it sees the commit.
    """
    return (isinstance(error, sa_exc.OperationalError) and
            getattr(error.orig, 'sqlite_errorcode', None) ==
            SQLITE_BUSY_SNAPSHOT)
