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
import os
import threading

from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade
from sqlalchemy import exc as sa_exc
import tenacity

from nova_ext.index import generation
from nova_ext.index import lock_waits
from nova_ext.index import sqlite

#: The execution option of the connections of :func:`begin_write`.
WRITE = 'nova_ext_index_write'

_LOCK = threading.Lock()
_MANAGERS = {}


def connection_url(conf):
    url = conf.nova_ext_index.connection
    if url:
        return url
    path = os.path.join(conf.state_path, 'nova_ext_index.sqlite')
    return 'sqlite:///%s' % path


@contextlib.contextmanager
def begin_write(engine, timeout=None, cooperative=True):
    """``with begin_write(engine) as conn``: a transaction that writes.

    Committed on exit, rolled back on an exception, like ``engine.begin()``;
    on SQLite it holds the database's write lock from its first statement,
    so that nothing another connection commits can invalidate what it read.

    :param timeout: seconds to wait for a lock: SQLite's write lock
        (``sqlite.BUSY_TIMEOUT_MS`` by default), a row or table lock on
        MySQL (whole seconds, at least one) and PostgreSQL
        (``query_timeout`` by default, see ``lock_waits``).
    :param cooperative: on SQLite, wait for the write lock by sleeping
        between tries, so that under eventlet the rest of the process runs
        meanwhile (SQLite's own wait blocks every greenthread). False where
        no other greenthread may run: SQLite waits, for ``timeout`` at most.

    A transaction that changed rows a list reads moves the index's
    generation before it commits (``generation``).
    """
    with engine.connect() as conn:
        conn.execution_options(**{WRITE: True})
        generation.begun(conn)
        if engine.dialect.name != 'sqlite':
            with conn.begin(), lock_waits.bounded(conn, timeout):
                yield conn
                generation.before_commit(conn)
            return
        wait = (sqlite.BUSY_TIMEOUT_MS / 1000.0 if timeout is None
                else timeout)
        try:
            with sqlite.begin_write(conn, wait, cooperative):
                yield conn
                generation.before_commit(conn)
        finally:
            sqlite.busy_timeout(conn, sqlite.READ_BUSY_TIMEOUT_MS)


@contextlib.contextmanager
def patient(conn):
    """Within, ``conn`` waits for locks as long as a writer does.

    For what writes without :func:`begin_write` (the schema migrations).
    """
    if conn.engine.dialect.name == 'sqlite':
        with sqlite.patient(conn):
            yield conn
        return
    with lock_waits.unbounded(conn):
        yield conn


def write(engine, fn, attempts=5, timeout=None, cooperative=True):
    """``fn(conn)`` in a :func:`begin_write` transaction; its result.

    Run again while it loses a race (:func:`lost_race`), up to ``attempts``
    times in all, after a random pause: two writers of the same new
    instance (each finding it absent, then inserting it) deadlock on
    MySQL, and run again at once they can deadlock again, in step. Not
    ``cooperative``, it runs again at once (no other greenthread may run).
    """
    def attempt():
        with begin_write(engine, timeout, cooperative) as conn:
            return fn(conn)
    return tenacity.Retrying(
        stop=tenacity.stop_after_attempt(attempts),
        wait=(tenacity.wait_random_exponential(multiplier=0.01, max=0.2)
              if cooperative else tenacity.wait_none()),
        retry=tenacity.retry_if_exception(lost_race),
        reraise=True)(attempt)


def lost_race(error):
    """Whether another writer got in first: run the transaction again.

    The index's engines are oslo.db's, whose filters raise a duplicate key
    as DBDuplicateEntry and a deadlock (MySQL, PostgreSQL) as DBDeadlock; a
    plain SQLAlchemy engine raises IntegrityError; SQLite refuses a write
    after another commit (``sqlite.stale_snapshot``). Not a lock wait that
    timed out, which oslo.db raises as a deadlock too on MySQL: that wait
    was the time the caller allowed.
    """
    if lock_waits.timed_out(error):
        return False
    return (isinstance(error, (db_exc.DBDuplicateEntry, db_exc.DBDeadlock,
                               sa_exc.IntegrityError)) or
            sqlite.stale_snapshot(error))


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
            manager.configure(connection=sqlite.engine_url(url),
                              max_retries=0,
                              thread_checkin=not in_transaction,
                              connection_parameters=(
                                  lock_waits.connection_parameters(
                                      url,
                                      conf.nova_ext_index.query_timeout)))
            engine = manager.writer.get_engine()
            generation.watch(engine)
            if engine.dialect.name == 'sqlite':
                sqlite.setup(engine, WRITE)
            _MANAGERS[(url, in_transaction)] = manager
        return manager


def get_engine(conf, in_transaction=False):
    return get_context_manager(conf, in_transaction).writer.get_engine()


def reset():
    """Forget every engine (tests, and processes that fork)."""
    with _LOCK:
        for manager in _MANAGERS.values():
            try:
                manager.writer.get_engine().dispose()
            except Exception:  # noqa: disposal is best effort
                pass
        _MANAGERS.clear()
