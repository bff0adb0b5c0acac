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
"""The trivial query of the cells' check, on connections of its own.

Every list request nova_ext serves asks each cell database ``SELECT 1``
(``cellhealth``). Through Nova's engine that costs three round trips:
the pool's ping when a connection is taken (oslo.db's engines ping on
every checkout), the query, and the rollback that ends the transaction it
began. The check keeps instead, per nova-api process, an engine of its
own for each database URL Nova's list reads, in autocommit mode and
without a reset when a connection goes back to its pool: the query is
the one round trip, and still one the database must answer. A pooled
connection the database dropped (restarted since it was opened) fails
the query: the engine's connections are all dropped and the query is
asked once more on a new one, so that only a database that does not
answer a new connection either counts as down.

Each engine keeps up to :data:`POOL_SIZE` idle connections to its
database per nova-api process.
"""

import os
import threading

import sqlalchemy as sa

#: Idle connections kept per cell database and process.
POOL_SIZE = 2
#: Seconds after which a kept connection is opened anew (oslo.db's
#: default ``[database]connection_recycle_time``).
RECYCLE = 3600

_LOCK = threading.Lock()
#: {(process id, the URL's text): engine}
_ENGINES = {}


def _engine(url):
    key = (os.getpid(), url.render_as_string(hide_password=False))
    with _LOCK:
        engine = _ENGINES.get(key)
        if engine is None:
            kwargs = {}
            if url.get_backend_name() == 'sqlite':
                # A connection of the pool serves any thread in turn.
                kwargs['connect_args'] = {'check_same_thread': False}
            engine = _ENGINES[key] = sa.create_engine(
                url, isolation_level='AUTOCOMMIT', pool_reset_on_return=None,
                # More at once than it keeps: never waited for, closed
                # when done.
                poolclass=sa.pool.QueuePool, pool_size=POOL_SIZE,
                max_overflow=-1, pool_recycle=RECYCLE, **kwargs)
        return engine


def ask(engine):
    """Ask the database of Nova's ``engine`` ``SELECT 1``.

    :raises: what the database's driver or SQLAlchemy raise when it does
        not answer a new connection.
    """
    probe = _engine(engine.url)
    try:
        _select_one(probe)
    except Exception:
        # A kept connection may be one the database has dropped; so may
        # the others kept with it.
        probe.dispose()
        _select_one(probe)


def _select_one(probe):
    conn = probe.raw_connection()
    try:
        cursor = conn.cursor()
        try:
            cursor.execute('SELECT 1')
            cursor.fetchall()
        finally:
            cursor.close()
    except Exception:
        # Not back into the pool: the next check connects anew.
        conn.invalidate()
        raise
    finally:
        conn.close()


def dispose():
    """Close this process's connections and forget the engines (tests)."""
    with _LOCK:
        engines = list(_ENGINES.values())
        _ENGINES.clear()
    for engine in engines:
        engine.dispose()
