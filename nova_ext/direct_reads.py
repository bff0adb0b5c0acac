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
"""nova_ext's one-statement reads, and one insert, on connections of its own.

Every list nova_ext serves asks each cell database ``SELECT 1`` (the
cells' check, ``cellhealth``) and the index whether changes wait
(``generation.settled``, from ``catch_up``), a rendered list asks the
API database whether build requests exist (``render.fastpath``), and a
detailed one that shows ``host_status`` reads its hosts' service
generations from the index (``services``), and a list whose page is kept at
an older generation reads the generation and the servers written since
(``page_cache``). Each catch-up of changes reads the instances' cells
and their request specs from the API database (``seams.internals``'
``api_db.cells_of`` and ``request_specs``), as a detailed page reads the
specs that changed; and it takes its ticket from the index's sequence,
an insert of one row (:func:`inserted_id`). On MySQL and MariaDB, the
index's turn (a lock of the session) and the reads under it go over a
connection of ours too (:func:`connection`). Through oslo.db's engines
(Nova's, the index's) each costs three round trips:
the pool's ping when a connection is taken (oslo.db's engines ping on
every checkout), the statement, and the rollback that ends the
transaction it began. These reads go instead through an engine of
nova_ext's own for the database URL of each engine they are given, per
process, in autocommit mode and without a reset when a
connection goes back to its pool: the statement is the one round trip,
and it reads what a statement of Nova's made at that moment reads, the
last committed rows. A pooled connection the database dropped (restarted
since it was opened) fails the statement with an error the driver's
dialect tells for a disconnection: the engine's connections are all
dropped and the statement is asked once more on a new one, so that only
a database that does not answer a new connection either fails the read.
Any other error (a statement the database refuses) is raised at once,
and the connection stays in the pool. What the database's driver raises
is raised as SQLAlchemy's ``DBAPIError``, as a plain SQLAlchemy engine
raises it.

A SQLite database (the embedded default) is read through the engine
given: a read of it makes no round trip, the engine's own connections
carry the settings its owner gave them (``nova_ext.index.sqlite``), and
one in memory is only reached through it. What that engine raises is
raised.

A cell's database that Nova's engine has not connected to yet is asked
at the URL that engine will read (:func:`ask_url`), on the same engine of
ours per URL.

Each engine keeps up to :data:`POOL_SIZE` idle connections to its
database per nova-api process.
"""

import functools
import weakref

import sqlalchemy as sa

from nova_ext import per_process

#: Idle connections kept per database and process.
POOL_SIZE = 2
#: Seconds after which a kept connection is opened anew (oslo.db's
#: default ``[database]connection_recycle_time``).
RECYCLE = 3600

_SELECT_ONE = sa.select(sa.literal_column('1'))

#: This process's {the URL's text: engine}.
_ENGINES = per_process.Registry()
#: This process's {an engine given: ours for its URL}, so that a read
#: does not write the URL out as a key each time.
_OURS = per_process.Registry()
#: {(statement, engine): the statement compiled for the engine's dialect}
_COMPILED = {}


def _engine(url):
    return _ENGINES.get(
        url.render_as_string(hide_password=False),
        lambda: sa.create_engine(
            url, isolation_level='AUTOCOMMIT', pool_reset_on_return=None,
            # A Connection (connection()) closed in autocommit: the
            # driver's rollback would be a round trip that ends nothing.
            skip_autocommit_rollback=True,
            # More at once than it keeps: never waited for, closed when
            # done.
            poolclass=sa.pool.QueuePool, pool_size=POOL_SIZE,
            max_overflow=-1, pool_recycle=RECYCLE))


def _ours(engine):
    """Our engine for the database of ``engine``, Nova's or the index's."""
    ours = _OURS.get(None, weakref.WeakKeyDictionary)
    own = ours.get(engine)
    if own is None:
        own = ours[engine] = _engine(engine.url)
    return own


def connection(engine):
    """A SQLAlchemy connection of ours to ``engine``'s database.

    For what a session holds across statements: the index's turn, a
    MySQL ``GET_LOCK`` (``nova_ext.index.apply.turn``). In autocommit,
    each statement is its own transaction and its one round trip; the
    connection is taken from the pool without a ping and given back
    without a rollback. So a kept connection the database dropped fails
    its first statement, with ``connection_invalidated`` set on the
    ``DBAPIError``: the caller closes it and asks a new one.

    :param engine: the engine of a MySQL, MariaDB or PostgreSQL database.
    """
    return _ours(engine).connect()


def padded(values, name):
    """``(size, params)`` of an IN list of ``values``' bound parameters.

    ``values`` padded to a power of two with its last one (an IN list
    means the same with a value twice), as ``{name0: value, ...}``: a few
    statements, each compiled once, serve every number of values
    (:func:`in_list`). ``(0, {})`` for none.
    """
    values = list(values)
    if not values:
        return 0, {}
    size = 1 << (len(values) - 1).bit_length()
    values += values[-1:] * (size - len(values))
    return size, {'%s%d' % (name, n): value for n, value in enumerate(values)}


def in_list(column, size, name):
    """``column IN (:name0, ..., :name<size-1>)``, for :func:`padded`."""
    return column.in_([sa.bindparam('%s%d' % (name, n))
                       for n in range(size)])


def ask(engine):
    """Ask the database of Nova's ``engine`` ``SELECT 1``.

    :raises: SQLAlchemy's ``DBAPIError`` (or another error of SQLAlchemy)
        when it does not answer a new connection; on SQLite, what
        ``engine`` raises.
    """
    scalar(engine, _SELECT_ONE)


def ask_url(url):
    """Ask the database at ``url`` ``SELECT 1``, on a connection of ours.

    For a database none of Nova's engines has connected to yet
    (``nova_ext.index.apply.cell_probe``): one engine per URL, as for an
    engine given.

    :param url: a SQLAlchemy URL of a MySQL, MariaDB or PostgreSQL
        database.
    :raises: as :func:`ask`.
    """
    _on(_engine(url), _SELECT_ONE, None, _one)


def scalar(engine, statement, params=None):
    """The first column of the first row ``statement`` reads.

    :param engine: Nova's engine of the database.
    :param statement: a SQLAlchemy Core statement; ``params`` its bound
        parameters' values by name.
    :raises: as :func:`ask`.
    """
    row = first(engine, statement, params)
    return None if row is None else row[0]


def first(engine, statement, params=None):
    """The first row ``statement`` reads (a tuple), or None.

    :param engine: the engine of the database (Nova's, the index's).
    :param statement: as :func:`scalar`'s.
    :raises: as :func:`ask`.
    """
    return _read(engine, statement, params, every=False)


def rows(engine, statement, params=None):
    """Every row ``statement`` reads: a list of tuples.

    :param engine: as :func:`first`'s.
    :param statement: as :func:`scalar`'s, without an expanding parameter
        (an IN list of a size known only with its values).
    :raises: as :func:`ask`.
    """
    return _read(engine, statement, params, every=True)


def _read(engine, statement, params, every):
    if engine.dialect.name == 'sqlite':
        with engine.connect() as conn:
            result = conn.execute(statement, params or {})
            return _fetched(result.all() if every else result.first(),
                            every)
    return _fetched(_run(engine, statement, params,
                         _all if every else _one), every)


def _all(cursor):
    return cursor.fetchall()


def _one(cursor):
    return cursor.fetchone()


def _run(engine, statement, params, fetch):
    """``fetch(cursor)`` once ``statement`` ran on a connection of ours."""
    return _on(_ours(engine), statement, params, fetch)


def _on(own, statement, params, fetch):
    """:func:`_run` on ``own``, our engine of the database."""
    dbapi_error = own.dialect.loaded_dbapi.Error
    try:
        try:
            return _execute(own, statement, params, fetch)
        except dbapi_error as e:
            if not _dropped(own, e):
                raise
            # The others kept with it may have been dropped too.
            own.dispose()
            return _execute(own, statement, params, fetch)
    except dbapi_error as e:
        raise sa.exc.DBAPIError.instance(
            str(_compiled(own, statement)), params, e, dbapi_error) from e


def inserted_id(engine, table):
    """Insert a row of ``table``'s defaults; its primary key.

    Committed when this returns, in one round trip (autocommit), where a
    transaction of ``engine`` costs three (the ping, the statement, the
    commit). For the index's sequence (``marks.sequence.take``): where the
    connection is found dropped, the row is inserted again on a new one,
    and one inserted before the drop is a number skipped, never one given
    twice. Not for SQLite, whose writers take its lock
    (``nova_ext.index.db.begin_write``).

    :param engine: the engine of a MySQL, MariaDB or PostgreSQL database.
    :raises: as :func:`ask`.
    """
    if engine.dialect.name == 'postgresql':
        [key] = table.primary_key.columns
        return _run(engine, _inserting(table, key), None, _first_column)
    return _run(engine, _inserting(table, None), None, _last_row_id)


@functools.lru_cache(maxsize=None)
def _inserting(table, returned):
    """``table``'s insert of defaults, RETURNING ``returned`` if given."""
    # values() with none: no column, whatever the compiler is given.
    statement = table.insert().values()
    return statement if returned is None else statement.returning(returned)


def _first_column(cursor):
    return cursor.fetchone()[0]


def _last_row_id(cursor):
    return cursor.lastrowid


def _fetched(read, every):
    if every:
        return [tuple(row) for row in read]
    return None if read is None else tuple(read)


def _dropped(own, error):
    """Whether the driver's ``error`` tells of a connection lost."""
    return own.dialect.is_disconnect(error, None, None)


def _compiled(own, statement):
    # The statements are the callers' constants: each compiled once per
    # engine.
    key = (statement, own)
    compiled = _COMPILED.get(key)
    if compiled is None:
        compiled = _COMPILED[key] = statement.compile(dialect=own.dialect)
    return compiled


def _execute(own, statement, params, fetch):
    compiled = _compiled(own, statement)
    values = compiled.construct_params(params)
    if compiled.positional:
        values = tuple(values[name] for name in compiled.positiontup)
    conn = own.raw_connection()
    try:
        cursor = conn.cursor()
        try:
            cursor.execute(str(compiled), values)
            read = fetch(cursor)
        finally:
            cursor.close()
    except own.dialect.loaded_dbapi.Error as e:
        if _dropped(own, e):
            # Not back into the pool: the next read connects anew.
            conn.invalidate()
        raise
    finally:
        conn.close()
    return read


def dispose():
    """Close this process's connections and forget the engines (tests)."""
    _OURS.clear()
    engines = _ENGINES.clear()
    _COMPILED.clear()
    for engine in engines:
        engine.dispose()
