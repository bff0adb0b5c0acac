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
"""How long the index's connections wait for locks on MySQL and PostgreSQL.

By default a MySQL statement waits 50 s for a row lock and a year for a
table lock, a PostgreSQL one forever: a list request or a Nova write would
hang behind another writer's lock (a long transaction, ``LOCK TABLES``).
Every connection of the index therefore waits at most ``query_timeout``
(MySQL counts whole seconds), a timed write (``db.begin_write``) its own
timeout, and only the schema migrations as long as the server allows.
(SQLite's waits are ``nova_ext.index.sqlite``'s.)
"""

import contextlib
import math
import urllib.parse

#: MySQL's lock waits: of row locks (InnoDB), of table locks (LOCK TABLES,
#: DDL).
_MYSQL = ('innodb_lock_wait_timeout', 'lock_wait_timeout')
#: Where a connection keeps its own MySQL lock waits (Connection.info).
_OWN_KEY = 'nova_ext_lock_waits'


def timed_out(error):
    """Whether ``error`` is a lock wait that ran out of time."""
    # MySQL's 1205, which oslo.db raises as DBDeadlock; PostgreSQL's
    # lock_timeout (55P03), which it raises as a plain DBError.
    text = str(error)
    return ('Lock wait timeout exceeded' in text or
            'canceling statement due to lock timeout' in text)


def _seconds(timeout):
    return max(1, int(math.ceil(timeout)))


def _milliseconds(timeout):
    return max(1, int(timeout * 1000))


def connection_parameters(url, query_timeout):
    """URL query parameters that bound a new connection's waits."""
    if url.startswith('mysql'):
        seconds = _seconds(query_timeout)
        params = {'connect_timeout': seconds, 'init_command': 'SET SESSION ' +
                  ', '.join('%s = %d' % (n, seconds) for n in _MYSQL)}
    elif url.startswith('postgresql'):
        params = {'connect_timeout': _seconds(query_timeout),
                  'options': '-c lock_timeout=%d' % _milliseconds(
                      query_timeout)}
    else:
        return ''
    return urllib.parse.urlencode(params)


@contextlib.contextmanager
def bounded(conn, timeout):
    """Within ``conn``'s transaction, lock waits of at most ``timeout`` s.

    None: those of the connection (``query_timeout``).
    """
    dialect = conn.engine.dialect.name
    if timeout is None or dialect not in ('mysql', 'postgresql'):
        yield conn
    elif dialect == 'postgresql':
        # SET LOCAL ends with the transaction.
        conn.exec_driver_sql("SET LOCAL lock_timeout = '%dms'"
                             % _milliseconds(timeout))
        yield conn
    else:
        with _mysql_session(conn, _seconds(timeout)):
            yield conn


@contextlib.contextmanager
def unbounded(conn):
    """Within, ``conn`` waits for locks as long as the server allows.

    For the schema migrations, which ``conn`` then runs in transactions of
    their own: the setting is the session's, and committed.
    """
    dialect = conn.engine.dialect.name
    if dialect == 'postgresql':
        conn.exec_driver_sql('SET lock_timeout = 0')
        conn.commit()
        try:
            yield conn
        finally:
            _restore(conn, 'RESET lock_timeout')
    elif dialect == 'mysql':
        with _mysql_session(conn, 'DEFAULT'):
            conn.commit()
            yield conn
    else:
        yield conn


@contextlib.contextmanager
def _mysql_session(conn, value):
    # The connection's own waits, read once per connection: they are put
    # back after each change, and the info goes with the connection.
    before = conn.info.get(_OWN_KEY)
    if before is None:
        before = conn.info[_OWN_KEY] = tuple(conn.exec_driver_sql(
            'SELECT ' + ', '.join('@@SESSION.%s' % n for n in _MYSQL)).one())
    conn.exec_driver_sql(_set_mysql([value] * len(_MYSQL)))
    try:
        yield conn
    finally:
        _restore(conn, _set_mysql(before))


def _set_mysql(values):
    return 'SET SESSION ' + ', '.join(
        '%s = %s' % (n, v) for n, v in zip(_MYSQL, values))


def _restore(conn, statement):
    """The connection's own waits back, for the next user of the pool.

    MySQL's session settings do not follow transactions; PostgreSQL's do:
    whatever the caller left open is ended, and the setting committed.
    """
    try:
        if conn.engine.dialect.name == 'postgresql':
            conn.rollback()
            conn.exec_driver_sql(statement)
            conn.commit()
        else:
            conn.exec_driver_sql(statement)
    except Exception:
        conn.invalidate()
