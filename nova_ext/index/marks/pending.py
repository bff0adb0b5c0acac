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

from oslo_db import exception as db_exc
import sqlalchemy as sa

from nova_ext.index import db
from nova_ext.index.marks import sequence
from nova_ext.index.marks import told as told_mod
from nova_ext.index.marks import upsert
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
        upsert.insert_new(conn, 'holds', holds)
        upsert.merge(conn, _rows(latest, number))
        if releases:
            _release(conn, releases)
        upsert.insert_new(conn, 'told', _told_rows(told, number))
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
            upsert.merge(conn, _rows(latest, sequence.next_number(conn)))
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
    compiled = upsert.compiled(conn.dialect, table)
    head, group, tail = _values_group(compiled.string)
    sql = '%s%s%s' % (head, ', '.join([group] * len(rows)), tail)
    params = [value for row in rows
              for value in upsert.parameters(compiled, row)]
    sqlite.autocommit(conn, sql, params, wait, cooperative)


@functools.lru_cache(maxsize=8)
def _release_sqlite(count):
    return ('DELETE FROM nova_ext_index_holds WHERE (uuid, holder, token) '
            'IN (VALUES %s)' % ', '.join(['(?, ?, ?)'] * count))


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


def take(engine, limit, skip=()):
    """The ``limit`` oldest marks, as ``{uuid: seq}``.

    :param skip: uuids not to take: marks that failed a moment ago, which
        must not hold back the newer ones behind them.
    """
    with engine.connect() as conn:
        return take_on(conn, limit, skip)


def none_left(engine, skip=()):
    """Whether no mark is pending but those of ``skip``'s uuids.

    A read that fails says there may be.
    """
    try:
        return not take(engine, 1, skip)
    except (sa.exc.SQLAlchemyError, db_exc.DBError):
        return False


def take_on(conn, limit, skip=()):
    """:func:`take`, read on ``conn`` (the turn's), in its transaction."""
    skip = frozenset(skip)
    taken = {}
    # Skipped here rather than with NOT IN: a cell down for long can fail
    # more marks than a statement takes parameters. At most len(skip) rows
    # more than taken are read.
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


def look(conn, limit, ticket):
    """:func:`take_on`, and which of those the index read after ``ticket``.

    One statement: a list request that waited for the turn makes it while
    the others wait behind it.

    :returns: ``(taken, fresh)``: ``taken`` as :func:`take` gives it,
        ``fresh`` the set of its uuids the index holds from a read whose
        ticket is higher than ``ticket`` (``nova_ext.index.marks.sequence``).
    """
    p, i = schema.PENDING.c, schema.INSTANCES.c
    rows = conn.execute(
        sa.select(p.uuid, p.seq, i.ticket)
        .select_from(schema.PENDING.outerjoin(schema.INSTANCES,
                                              i.uuid == p.uuid))
        .order_by(p.first_event_at)
        .limit(limit))
    taken, fresh = {}, set()
    for uuid, seq, read_ticket in rows:
        taken[uuid] = seq
        if read_ticket is not None and read_ticket > ticket:
            fresh.add(uuid)
    return taken, fresh


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
        upsert.merge(conn, _rows({u: (now, now) for u in uuids},
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
