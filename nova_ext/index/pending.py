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
between the two, and the age of the oldest mark is the index's lag.

Each mark carries a number of the index's own sequence (``seq``), taken
anew each time it is recorded or renewed: a reader removes only a mark
whose number has not changed since it took it, whatever the writers'
clocks said (``nova_ext.index.sequence``).
"""

import functools
import time
import weakref

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite as sqlite_dialect

from nova_ext.index import db
from nova_ext.index import sequence
from nova_ext.index import sqlite

PENDING = sa.table(
    'nova_ext_index_pending',
    sa.column('uuid', sa.String), sa.column('first_event_at', sa.Float),
    sa.column('last_event_at', sa.Float), sa.column('attempts', sa.Integer),
    sa.column('holds', sa.Integer), sa.column('releases', sa.Integer),
    sa.column('held_at', sa.Float), sa.column('seq', sa.BigInteger))

#: Seconds after its last hold that a mark with more holds than releases
#: may be removed all the same: its writer died before it could release.
HOLD_EXPIRY = 300.0


def coalesce(events, into=None):
    """``{uuid: (first, last)}`` of ``(uuid, event_time)`` pairs.

    :param into: a dict of the same form to add to (and return).
    """
    latest = {} if into is None else into
    for uuid, when in events:
        first, last = latest.get(uuid, (when, when))
        latest[uuid] = (min(first, when), max(last, when))
    return latest


def mark(engine, events, holds=None, timeout=None, cooperative=True):
    """Mark instances as changed, in one transaction.

    :param events: iterable of ``(uuid, event_time)``, event_time in epoch
        seconds; or a dict of :func:`coalesce`.
    :param holds: ``{uuid: (holds, releases)}`` to add to the marks: a
        Nova transaction that will change the instance and has not
        committed yet holds its mark, and releases it once it has
        committed (or rolled back); see :func:`unmark`.
    :param timeout, cooperative: how to wait for a lock
        (``db.begin_write``).
    :returns: the number the marks took (``nova_ext.index.sequence``), or
        None when there was nothing to mark.
    """
    latest = events if isinstance(events, dict) else coalesce(events)
    if not latest:
        return None
    holds = holds or {}
    # In uuid order: concurrent marks lock rows in the same order, so that
    # they wait for each other rather than deadlock.
    rows = []
    for uuid, (first, last) in sorted(latest.items()):
        held, released = holds.get(uuid, (0, 0))
        rows.append({'uuid': uuid, 'first_event_at': first,
                     'last_event_at': last, 'attempts': 0, 'holds': held,
                     'releases': released,
                     'held_at': last if held else 0.0})
    if engine.dialect.name == 'sqlite' and len(rows) <= AUTOCOMMIT_ROWS:
        return _mark_sqlite(engine, rows, timeout, cooperative)

    def attempt(conn):
        number = sequence.next_number(conn)
        _mark(conn, [dict(row, seq=number) for row in rows])
        return number
    # MySQL and PostgreSQL can still pick an upsert as a deadlock victim;
    # so can a backend without an upsert lose the race between its read
    # and its insert: db.write runs it again, with a new number.
    return db.write(engine, attempt, timeout=timeout,
                    cooperative=cooperative)


#: Marks at most that SQLite records in one statement (8 parameters each,
#: under the 999 of SQLite's older builds); more are one transaction.
AUTOCOMMIT_ROWS = 120


def _mark_sqlite(engine, rows, timeout, cooperative):
    """All ``rows`` in one statement that SQLite commits as it runs it.

    The marks of a batch are one statement, so that they are recorded all
    or none: a batch that failed is recorded again whole, and would count
    its holds and releases twice had a part of it been recorded. And a
    hold, which Nova's write waits for, does not hold the write lock across
    BEGIN, the statement and COMMIT, each a wait for the interpreter lock.

    The number is taken first, by a statement of its own: taken after the
    changes committed, it orders them before any read that sees it, even
    if the marks fail and are recorded later with another.
    """
    wait = (sqlite.BUSY_TIMEOUT_MS / 1000.0 if timeout is None
            else timeout)
    with engine.connect() as conn:
        number = sqlite.autocommit(conn, sequence.SQLITE_NEXT, (), wait,
                                   cooperative).lastrowid
        compiled = _compiled(conn.dialect, _upsert('sqlite'))
        head, group, tail = _values_group(compiled.string)
        sql = '%s%s%s' % (head, ', '.join([group] * len(rows)), tail)
        params = [value for row in rows
                  for value in _parameters(compiled, dict(row, seq=number))]
        sqlite.autocommit(conn, sql, params, wait, cooperative)
    return number


@functools.lru_cache(maxsize=4)
def _values_group(sql):
    """``sql`` split around its one ``VALUES (?, ...)`` row."""
    start = sql.index(' VALUES (') + len(' VALUES ')
    end = sql.index(')', start) + 1
    return sql[:start], sql[start:end], sql[end:]


@functools.lru_cache(maxsize=None)
def _upsert(dialect):
    """INSERT of marks that merges them into marks already held, or None.

    One statement, which starts with a write: no read whose result another
    writer could change before the write.
    """
    c = PENDING.c
    if dialect in ('sqlite', 'postgresql'):
        insert = (sqlite_dialect if dialect == 'sqlite'
                  else postgresql).insert
        stmt = insert(PENDING)
        new = stmt.excluded
        # SQLite's min() and max() of two values are PostgreSQL's least()
        # and greatest().
        least, greatest = ((sa.func.min, sa.func.max) if dialect == 'sqlite'
                           else (sa.func.least, sa.func.greatest))
        return stmt.on_conflict_do_update(
            index_elements=[c.uuid], set_=_merged(new, least, greatest))
    if dialect == 'mysql':
        stmt = mysql.insert(PENDING)
        return stmt.on_duplicate_key_update(
            **_merged(stmt.inserted, sa.func.least, sa.func.greatest))
    return None


def _merged(new, least, greatest):
    """What an upsert sets: ``new`` (the row offered) merged in."""
    c = PENDING.c
    return {'first_event_at': least(c.first_event_at, new.first_event_at),
            'last_event_at': greatest(c.last_event_at, new.last_event_at),
            'holds': c.holds + new.holds,
            'releases': c.releases + new.releases,
            'held_at': greatest(c.held_at, new.held_at),
            'seq': new.seq}


#: ``{dialect: compiled upsert}``: SQLAlchemy does not cache the
#: compilation of ON CONFLICT and ON DUPLICATE KEY statements, which costs
#: three times what executing one costs on SQLite, on the hold every Nova
#: write waits for.
_COMPILED = weakref.WeakKeyDictionary()


def _execute_upsert(conn, upsert, rows):
    """Run ``upsert`` for ``rows``, compiled once per dialect.

    Not for several rows on a server: SQLAlchemy sends those as one
    multi-row statement, the driver's executemany as one per row.
    """
    dialect = conn.dialect
    if len(rows) > 1 and dialect.name != 'sqlite':
        conn.execute(upsert, rows)
        return
    compiled = _compiled(dialect, upsert)
    conn.exec_driver_sql(compiled.string,
                         [_parameters(compiled, row) for row in rows])


def _compiled(dialect, upsert):
    """``upsert`` compiled for ``dialect``, once."""
    compiled = _COMPILED.get(dialect)
    if compiled is None:
        compiled = _COMPILED[dialect] = upsert.compile(dialect=dialect)
    return compiled


def _parameters(compiled, row):
    """A row's parameters as the driver takes them for ``compiled``."""
    params = compiled.construct_params(row)
    if compiled.positional:
        return tuple(params[name] for name in compiled.positiontup)
    return params


def _mark(conn, rows):
    upsert = _upsert(conn.dialect.name)
    if upsert is not None:
        _execute_upsert(conn, upsert, rows)
        return
    held = {row.uuid: row for row in conn.execute(
        sa.select(PENDING).where(PENDING.c.uuid.in_([r['uuid']
                                                     for r in rows])))}
    new = []
    for values in rows:
        row = held.get(values['uuid'])
        if row is None:
            new.append(values)
        elif (values['last_event_at'] > row.last_event_at or
                values['first_event_at'] < row.first_event_at or
                values['holds'] or values['releases']):
            conn.execute(sa.update(PENDING).where(
                PENDING.c.uuid == row.uuid).values(
                first_event_at=min(values['first_event_at'],
                                   row.first_event_at),
                last_event_at=max(values['last_event_at'],
                                  row.last_event_at),
                holds=row.holds + values['holds'],
                releases=row.releases + values['releases'],
                held_at=max(row.held_at, values['held_at']),
                seq=values['seq']))
    if new:
        conn.execute(sa.insert(PENDING), new)


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
        rows = conn.execute(sa.select(PENDING.c.uuid, PENDING.c.seq)
                            .order_by(PENDING.c.first_event_at)
                            .limit(limit + len(skip)))
        for row in rows:
            if row.uuid not in skip:
                taken[row.uuid] = row.seq
                if len(taken) == limit:
                    break
    return taken


def unmark(engine, taken, now=None):
    """Remove marks that no event has renewed since they were taken.

    :param taken: ``{uuid: seq}``, as :func:`take` gives.

    Nor those a Nova transaction still holds (more holds than releases):
    what was read of their instance may predate its commit. A hold older
    than HOLD_EXPIRY is its writer's that died.
    """
    if not taken:
        return
    expired = (time.time() if now is None else now) - HOLD_EXPIRY
    with db.begin_write(engine) as conn:
        # One statement, executed for every mark (executemany).
        conn.execute(sa.delete(PENDING).where(
            PENDING.c.uuid == sa.bindparam('taken_uuid'),
            PENDING.c.seq == sa.bindparam('taken_seq'),
            sa.or_(PENDING.c.holds <= PENDING.c.releases,
                   PENDING.c.held_at < expired)),
            [{'taken_uuid': uuid, 'taken_seq': seq}
             for uuid, seq in sorted(taken.items())])


def failed(engine, uuids):
    """Count a failed attempt on marks that stay for the next pass."""
    if not uuids:
        return
    with db.begin_write(engine) as conn:
        conn.execute(sa.update(PENDING).where(
            PENDING.c.uuid.in_(list(uuids))).values(
            attempts=PENDING.c.attempts + 1))


def lag(engine, now=None):
    """Seconds since the oldest unapplied change; 0.0 when none."""
    with engine.connect() as conn:
        oldest = conn.execute(
            sa.select(sa.func.min(PENDING.c.first_event_at))).scalar()
    if oldest is None:
        return 0.0
    return max(0.0, (time.time() if now is None else now) - oldest)


def count(engine):
    with engine.connect() as conn:
        return conn.execute(
            sa.select(sa.func.count()).select_from(PENDING)).scalar()
