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
"""The pending table: instances known to have changed, not yet re-read.

Whatever learns of a change (a notification, a reconcile pass) marks the
instance here first, and only once that is committed (one transaction per
batch of changes) lets go of the news (acknowledges the message). The
indexer re-reads marked instances from their cells and unmarks them once
the index holds a read that began after the last mark. Nothing is lost
between the two. A mark that a Nova transaction holds stays until the
transaction's release, or until its holder is taken for dead
(``nova_ext.index.marks.holders``).

Each mark carries a number of the index's own sequence (``seq``), taken
anew each time it is recorded or renewed: a reader removes only a mark
whose number has not changed since it took it, whatever the writers'
clocks said (``nova_ext.index.marks.sequence``).
"""

import functools
import time
import weakref

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite as sqlite_dialect

from nova_ext.index import db
from nova_ext.index.marks import sequence
from nova_ext.index.marks import told as told_mod
from nova_ext.index import schema
from nova_ext.index import sqlite


def coalesce(events, into=None):
    """``{uuid: (first, last)}`` of ``(uuid, event_time)`` pairs.

    :param into: a dict of the same form to add to (and return).
    """
    latest = {} if into is None else into
    for uuid, when in events:
        first, last = latest.get(uuid, (when, when))
        latest[uuid] = (min(first, when), max(last, when))
    return latest


def mark(engine, events, holds=(), releases=(), timeout=None,
         cooperative=True, told=()):
    """Mark instances as changed, in one transaction.

    :param events: iterable of ``(uuid, event_time)``, event_time in epoch
        seconds; or a dict of :func:`coalesce`.
    :param holds: ``(uuid, holder, token)`` of Nova transactions that will
        change the instance and have not committed yet: each holds the
        mark until its release (``nova_ext.index.marks.holders``).
    :param releases: ``(uuid, holder, token)`` of holds whose transaction
        has committed (or rolled back); see :func:`unmark`.
    :param timeout, cooperative: how to wait for a lock
        (``db.begin_write``).
    :param told: ids of the notifications the marks were made from, to
        record with them (``nova_ext.index.marks.told``).
    :returns: the number the marks took (``nova_ext.index.marks.sequence``), or
        None when there was nothing to mark.
    """
    latest = events if isinstance(events, dict) else coalesce(events)
    if not latest:
        return None
    holds, releases = _keys(holds), _keys(releases)
    told = told_mod.usable(told)
    if engine.dialect.name == 'sqlite' and max(
            len(latest), len(holds), len(releases),
            len(told)) <= AUTOCOMMIT_ROWS:
        return _mark_sqlite(engine, latest, holds, releases, timeout,
                            cooperative, told)

    def attempt(conn):
        number = sequence.next_number(conn)
        _insert_new(conn, 'holds', holds)
        _mark(conn, _rows(latest, number))
        if releases:
            _release(conn, releases)
        _insert_new(conn, 'told', _told_rows(told, number))
        return number
    # MySQL and PostgreSQL can still pick an upsert as a deadlock victim;
    # so can a backend without an upsert lose the race between its read
    # and its insert: db.write runs it again, with a new number.
    return db.write(engine, attempt, timeout=timeout,
                    cooperative=cooperative)


def mark_untold(engine, changes):
    """Mark the changes of notifications their own process had not marked.

    For ``nova-ext-indexer``, in one transaction: the ids found recorded
    (``told``) are read in it, right before the marks, and forgotten with
    them, so that an in-process mark committed while the indexer's batch
    waited is found.

    :param changes: ``(uuid, event_time, message_id)`` of notifications.
    :returns: the ids found, whose changes were not marked again.
    """
    def attempt(conn):
        found = told_mod.found(conn, [i for _u, _w, i in changes])
        # An instance is marked if any of its notifications was not told.
        latest = coalesce((u, w) for u, w, i in changes if i not in found)
        if latest:
            _mark(conn, _rows(latest, sequence.next_number(conn)))
        told_mod.forget(conn, found)
        return found
    return db.write(engine, attempt)


def _rows(latest, number):
    """The marks of :func:`coalesce`'s ``latest``, numbered ``number``.

    In uuid order: concurrent marks lock rows in the same order, so that
    they wait for each other rather than deadlock.
    """
    return [{'uuid': uuid, 'first_event_at': first, 'last_event_at': last,
             'attempts': 0, 'seq': number}
            for uuid, (first, last) in sorted(latest.items())]


def _told_rows(told, number):
    """The rows that record notification ids ``told`` (``told``)."""
    return [{'message_id': i, 'seq': number} for i in told]


def _keys(holds):
    return [{'uuid': u, 'holder': h, 'token': t}
            for u, h, t in sorted(set(holds))]


#: Marks, holds or releases at most that SQLite records in one statement
#: (at most 5 parameters each, under the 999 of SQLite's older builds);
#: more are one transaction.
AUTOCOMMIT_ROWS = 120


def _mark_sqlite(engine, latest, holds, releases, timeout, cooperative,
                 told=()):
    """``latest``'s marks in statements that SQLite commits as it runs each.

    A hold, which Nova's write waits for, does not hold the write lock
    across BEGIN, the statements and COMMIT, each a wait for the
    interpreter lock. Each statement can be run again after a failure
    with the same result: a batch that failed part way is recorded again
    whole.

    The number is taken first, by a statement of its own: taken after the
    changes committed, it orders them before any read that sees it, even
    if the marks fail and are recorded later with another. Holds are
    recorded before the marks that number them, releases after: a reader
    of the mark between the two finds it held either way. The ids of the
    notifications they were made from come last: an id is found only once
    its marks are recorded.
    """
    wait = (sqlite.BUSY_TIMEOUT_MS / 1000.0 if timeout is None
            else timeout)
    with engine.connect() as conn:
        number = sqlite.autocommit(conn, sequence.SQLITE_NEXT, (), wait,
                                   cooperative).lastrowid
        if holds:
            _sqlite_rows(conn, 'holds', holds, wait, cooperative)
        _sqlite_rows(conn, 'pending', _rows(latest, number), wait,
                     cooperative)
        if releases:
            sqlite.autocommit(conn, _release_sqlite(len(releases)), [
                value for key in releases
                for value in (key['uuid'], key['holder'], key['token'])],
                wait, cooperative)
        if told:
            _sqlite_rows(conn, 'told', _told_rows(told, number), wait,
                         cooperative)
    return number


def _sqlite_rows(conn, table, rows, wait, cooperative):
    """``rows`` upserted into ``table`` by one autocommitted statement."""
    compiled = _compiled(conn.dialect, table)
    head, group, tail = _values_group(compiled.string)
    sql = '%s%s%s' % (head, ', '.join([group] * len(rows)), tail)
    params = [value for row in rows
              for value in _parameters(compiled, row)]
    sqlite.autocommit(conn, sql, params, wait, cooperative)


@functools.lru_cache(maxsize=8)
def _release_sqlite(count):
    return ('DELETE FROM nova_ext_index_holds WHERE (uuid, holder, token) '
            'IN (VALUES %s)' % ', '.join(['(?, ?, ?)'] * count))


def _insert_new(conn, table, rows):
    """``rows`` into ``table`` (``holds``, ``told``) but those present."""
    if not rows:
        return
    if _upsert(conn.dialect.name, table) is not None:
        _execute_upsert(conn, table, rows)
        return
    target, keys = _TABLES[table]
    for row in rows:
        if not conn.execute(sa.select(*keys).where(
                *[key == row[key.name] for key in keys])).first():
            conn.execute(sa.insert(target).values(**row))


def _release(conn, releases):
    conn.execute(sa.delete(schema.HOLDS).where(
        schema.HOLDS.c.uuid == sa.bindparam('r_uuid'),
        schema.HOLDS.c.holder == sa.bindparam('r_holder'),
        schema.HOLDS.c.token == sa.bindparam('r_token')),
        [{'r_uuid': key['uuid'], 'r_holder': key['holder'],
          'r_token': key['token']} for key in releases])


@functools.lru_cache(maxsize=4)
def _values_group(sql):
    """``sql`` split around its one ``VALUES (?, ...)`` row."""
    start = sql.index(' VALUES (') + len(' VALUES ')
    end = sql.index(')', start) + 1
    return sql[:start], sql[start:end], sql[end:]


#: The tables :func:`_upsert` writes, and the columns of their keys.
_TABLES = {
    'pending': (schema.PENDING, [schema.PENDING.c.uuid]),
    'holds': (schema.HOLDS, [schema.HOLDS.c.uuid, schema.HOLDS.c.holder,
                             schema.HOLDS.c.token]),
    'told': (schema.TOLD, [schema.TOLD.c.message_id]),
}


@functools.lru_cache(maxsize=None)
def _upsert(dialect, table):
    """INSERT of ``table``'s rows that merges them into those present.

    ``pending``: marks, merged into marks already held; ``holds`` and
    ``told``: holds and notification ids, which one recorded twice leaves
    as they are. None for a backend without upserts. One statement, which
    starts with a write: no read whose result another writer could change
    before the write.
    """
    target, keys = _TABLES[table]
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


def _execute_upsert(conn, table, rows):
    """Upsert ``rows`` into ``table`` (:func:`_upsert`), compiled once.

    Not for several rows on a server: SQLAlchemy sends those as one
    multi-row statement, the driver's executemany as one per row.
    """
    dialect = conn.dialect
    if len(rows) > 1 and dialect.name != 'sqlite':
        conn.execute(_upsert(dialect.name, table), rows)
        return
    compiled = _compiled(dialect, table)
    conn.exec_driver_sql(compiled.string,
                         [_parameters(compiled, row) for row in rows])


def _compiled(dialect, table):
    """``table``'s upsert compiled for ``dialect``, once."""
    compiled = _COMPILED.setdefault(dialect, {})
    if table not in compiled:
        compiled[table] = _upsert(dialect.name, table).compile(
            dialect=dialect)
    return compiled[table]


def _parameters(compiled, row):
    """A row's parameters as the driver takes them for ``compiled``."""
    params = compiled.construct_params(row)
    if compiled.positional:
        return tuple(params[name] for name in compiled.positiontup)
    return params


def _mark(conn, rows):
    if _upsert(conn.dialect.name, 'pending') is not None:
        _execute_upsert(conn, 'pending', rows)
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


def take(engine, limit, skip=()):
    """The ``limit`` oldest marks, as ``{uuid: seq}``.

    :param skip: uuids not to take: marks that failed a moment ago, which
        must not hold back the newer ones behind them.
    """
    skip = frozenset(skip)
    taken = {}
    with engine.connect() as conn:
        # Skipped here rather than with NOT IN: a cell down for long can
        # fail more marks than a statement takes parameters. At most
        # len(skip) rows more than taken are read.
        c = schema.PENDING.c
        rows = conn.execute(sa.select(c.uuid, c.seq)
                            .order_by(c.first_event_at)
                            .limit(limit + len(skip)))
        for row in rows:
            if row.uuid not in skip:
                taken[row.uuid] = row.seq
                if len(taken) == limit:
                    break
    return taken


def unmark(engine, taken):
    """Remove marks that no event has renewed since they were taken.

    :param taken: ``{uuid: seq}``, as :func:`take` gives.

    Nor those a Nova transaction still holds, of a holder whose row is
    there: what was read of their instance may predate its commit. The
    holds of a holder taken for dead no longer count
    (``nova_ext.index.marks.holders``).
    """
    if not taken:
        return
    held = sa.exists().where(schema.HOLDS.c.uuid == schema.PENDING.c.uuid,
                             schema.HOLDERS.c.holder == schema.HOLDS.c.holder)

    def _unmark(conn):
        # One statement, executed for every mark (executemany).
        conn.execute(sa.delete(schema.PENDING).where(
            schema.PENDING.c.uuid == sa.bindparam('taken_uuid'),
            schema.PENDING.c.seq == sa.bindparam('taken_seq'), ~held),
            [{'taken_uuid': uuid, 'taken_seq': seq}
             for uuid, seq in sorted(taken.items())])
    # On MariaDB two unmarking writers, or one and a writer of holds, can
    # deadlock on the pending and holds rows: a lost race, run again (the
    # deletion is conditional, so running it twice changes nothing).
    db.write(engine, _unmark)


def renew(conn, uuids, now):
    """Mark ``uuids`` again, in ``conn``'s transaction, with a new number.

    A reader that took their marks before must not remove them.
    """
    if uuids:
        _mark(conn, _rows({u: (now, now) for u in uuids},
                          sequence.next_number(conn)))


def failed(engine, uuids):
    """Count a failed attempt on marks that stay for the next pass."""
    if not uuids:
        return
    with db.begin_write(engine) as conn:
        conn.execute(sa.update(schema.PENDING).where(
            schema.PENDING.c.uuid.in_(list(uuids))).values(
            attempts=schema.PENDING.c.attempts + 1))


def oldest_age(engine, now=None):
    """Seconds since the oldest mark was made, by its writer's clock.

    Informational (``nova_ext.index.upkeep.rules``); 0.0 when there is none.
    """
    with engine.connect() as conn:
        oldest = conn.execute(
            sa.select(sa.func.min(schema.PENDING.c.first_event_at))).scalar()
    if oldest is None:
        return 0.0
    return max(0.0, (time.time() if now is None else now) - oldest)


def count(engine):
    with engine.connect() as conn:
        return conn.execute(
            sa.select(sa.func.count()).select_from(schema.PENDING)).scalar()
