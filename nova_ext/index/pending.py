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
instance here first, in its own committed transaction, and only then lets
go of the news (acknowledges the message). The indexer re-reads marked
instances from their cells and unmarks them once the index holds a state at
least as new as the last mark. Nothing is lost between the two, and the age
of the oldest mark is the index's lag.
"""

import time

from oslo_db import exception as db_exc
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

#: SQLite's extended result code for a write refused because the
#: transaction's snapshot is stale.
SQLITE_BUSY_SNAPSHOT = 517

PENDING = sa.table(
    'nova_ext_index_pending',
    sa.column('uuid', sa.String), sa.column('first_event_at', sa.Float),
    sa.column('last_event_at', sa.Float), sa.column('attempts', sa.Integer))


def stale_snapshot(error):
    """Whether SQLite refused a write for another connection's commit.

    oslo.db begins SQLite transactions itself, so a transaction's first
    read takes a snapshot. Once another connection has committed (any
    write, to any table), a write of the transaction fails at once, in WAL
    mode, with SQLITE_BUSY_SNAPSHOT ("database is locked"), which oslo.db
    raises as it is. Run again, the transaction sees that commit.
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


def mark(engine, events):
    """Mark instances as changed.

    :param events: iterable of ``(uuid, event_time)``, event_time in epoch
        seconds.
    """
    latest = {}
    for uuid, when in events:
        first, last = latest.get(uuid, (when, when))
        latest[uuid] = (min(first, when), max(last, when))
    if not latest:
        return
    for attempt in range(3):
        try:
            with engine.begin() as conn:
                _mark(conn, latest)
            return
        except (db_exc.DBError, sa_exc.DBAPIError) as e:
            # Another writer inserted one of these uuids between our read
            # and our insert (or, on SQLite, wrote anything): the next pass
            # reads again, and updates the row instead.
            if attempt == 2 or not lost_race(e):
                raise


def _mark(conn, latest):
    held = {row.uuid: row for row in conn.execute(
        sa.select(PENDING).where(PENDING.c.uuid.in_(list(latest))))}
    new = []
    # In uuid order: concurrent marks lock rows in the same order, so that
    # they wait for each other rather than deadlock.
    for uuid, (first, last) in sorted(latest.items()):
        row = held.get(uuid)
        if row is None:
            new.append({'uuid': uuid, 'first_event_at': first,
                        'last_event_at': last, 'attempts': 0})
        elif last > row.last_event_at or first < row.first_event_at:
            conn.execute(sa.update(PENDING).where(
                PENDING.c.uuid == uuid).values(
                first_event_at=min(first, row.first_event_at),
                last_event_at=max(last, row.last_event_at)))
    if new:
        conn.execute(sa.insert(PENDING), new)


def take(engine, limit, skip=()):
    """The ``limit`` oldest marks, as ``{uuid: last_event_at}``.

    :param skip: uuids not to take: marks that failed a moment ago, which
        must not hold back the newer ones behind them.
    """
    skip = frozenset(skip)
    taken = {}
    with engine.connect() as conn:
        # Skipped here rather than with NOT IN: a cell down for long can
        # fail more marks than a statement takes parameters. At most
        # len(skip) rows more than taken are read.
        rows = conn.execute(sa.select(PENDING.c.uuid, PENDING.c.last_event_at)
                            .order_by(PENDING.c.first_event_at)
                            .limit(limit + len(skip)))
        for row in rows:
            if row.uuid not in skip:
                taken[row.uuid] = row.last_event_at
                if len(taken) == limit:
                    break
    return taken


def unmark(engine, taken):
    """Remove marks that no event has renewed since they were taken."""
    if not taken:
        return
    with engine.begin() as conn:
        for uuid, last in taken.items():
            conn.execute(sa.delete(PENDING).where(
                PENDING.c.uuid == uuid, PENDING.c.last_event_at <= last))


def failed(engine, uuids):
    """Count a failed attempt on marks that stay for the next pass."""
    if not uuids:
        return
    with engine.begin() as conn:
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
