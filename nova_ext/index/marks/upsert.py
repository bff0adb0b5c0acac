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
"""Upserts of the marks' tables: one statement that merges rows in.

A mark, a hold or a notification id recorded twice is one row: a mark
merged into the one there (its earliest first event, its latest last one,
the new number), a hold or an id left as it is. One statement starting
with a write, where the backend has one (SQLite, PostgreSQL, MySQL), so
that no other writer can change what a read saw before the write.
"""

import functools
import weakref

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite as sqlite_dialect

from nova_ext.index import schema


#: The tables :func:`statement` writes, and the columns of their keys.
TABLES = {
    'pending': (schema.PENDING, [schema.PENDING.c.uuid]),
    'holds': (schema.HOLDS, [schema.HOLDS.c.uuid, schema.HOLDS.c.holder,
                             schema.HOLDS.c.token]),
    'told': (schema.TOLD, [schema.TOLD.c.message_id]),
}


@functools.lru_cache(maxsize=None)
def statement(dialect, table):
    """INSERT of ``table``'s rows that merges them into those present.

    ``pending``: marks, merged into marks already held; ``holds`` and
    ``told``: holds and notification ids, which one recorded twice leaves
    as they are. None for a backend without upserts. One statement, which
    starts with a write: no read whose result another writer could change
    before the write.
    """
    target, keys = TABLES[table]
    if dialect in ('sqlite', 'postgresql'):
        insert = (sqlite_dialect if dialect == 'sqlite'
                  else postgresql).insert
        stmt = insert(target)
        if table != 'pending':
            return stmt.on_conflict_do_nothing(index_elements=keys)
        # SQLite's min() and max() of two values are PostgreSQL's least()
        # and greatest().
        least, greatest = ((sa.func.min, sa.func.max) if dialect == 'sqlite'
                           else (sa.func.least, sa.func.greatest))
        return stmt.on_conflict_do_update(
            index_elements=keys,
            set_=_merged(stmt.excluded, least, greatest))
    if dialect == 'mysql':
        stmt = mysql.insert(target)
        if table != 'pending':
            # A key column set to the value it has: the row stays as it is.
            last = keys[-1].name
            return stmt.on_duplicate_key_update(
                **{last: stmt.inserted[last]})
        return stmt.on_duplicate_key_update(
            **_merged(stmt.inserted, sa.func.least, sa.func.greatest))
    return None


def _merged(new, least, greatest):
    """What an upsert sets: ``new`` (the row offered) merged in."""
    c = schema.PENDING.c
    return {'first_event_at': least(c.first_event_at, new.first_event_at),
            'last_event_at': greatest(c.last_event_at, new.last_event_at),
            'seq': new.seq}


#: ``{dialect: {table: compiled upsert}}``: SQLAlchemy does not cache the
#: compilation of ON CONFLICT and ON DUPLICATE KEY statements, which costs
#: three times what executing one costs on SQLite, on the hold every Nova
#: write waits for.
_COMPILED = weakref.WeakKeyDictionary()


def execute(conn, table, rows):
    """Upsert ``rows`` into ``table`` (:func:`statement`), compiled once.

    Not for several rows on a server: SQLAlchemy sends those as one
    multi-row statement, the driver's executemany as one per row.
    """
    dialect = conn.dialect
    if len(rows) > 1 and dialect.name != 'sqlite':
        conn.execute(statement(dialect.name, table), rows)
        return
    done = compiled(dialect, table)
    conn.exec_driver_sql(done.string,
                         [parameters(done, row) for row in rows])


def compiled(dialect, table):
    """``table``'s upsert compiled for ``dialect``, once."""
    done = _COMPILED.setdefault(dialect, {})
    if table not in done:
        done[table] = statement(dialect.name, table).compile(
            dialect=dialect)
    return done[table]


def parameters(done, row):
    """A row's parameters as the driver takes them for ``done``.

    :param done: an upsert compiled for the connection (:func:`compiled`).
    """
    params = done.construct_params(row)
    if done.positional:
        return tuple(params[name] for name in done.positiontup)
    return params


def merge(conn, rows):
    """Marks ``rows`` (``pending``'s) into the marks there, or new."""
    if statement(conn.dialect.name, 'pending') is not None:
        execute(conn, 'pending', rows)
        return
    held = {row.uuid: row for row in conn.execute(
        sa.select(schema.PENDING).where(schema.PENDING.c.uuid.in_(
            [r['uuid'] for r in rows])))}
    new = []
    for values in rows:
        row = held.get(values['uuid'])
        if row is None:
            new.append(values)
            continue
        # Renewed even when the times say nothing new: a reader that took
        # the mark before must not remove it.
        conn.execute(sa.update(schema.PENDING).where(
            schema.PENDING.c.uuid == row.uuid).values(
            first_event_at=min(values['first_event_at'], row.first_event_at),
            last_event_at=max(values['last_event_at'], row.last_event_at),
            seq=values['seq']))
    if new:
        conn.execute(sa.insert(schema.PENDING), new)


def insert_new(conn, table, rows):
    """``rows`` into ``table`` (``holds``, ``told``) but those present."""
    if not rows:
        return
    if statement(conn.dialect.name, table) is not None:
        execute(conn, table, rows)
        return
    target, keys = TABLES[table]
    for row in rows:
        if not conn.execute(sa.select(*keys).where(
                *[key == row[key.name] for key in keys])).first():
            conn.execute(sa.insert(target).values(**row))
