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
"""The index's generation: what a list read, named by one value.

Every transaction that writes the index (``db.begin_write``) and changes a
row a list can read (the copies of Nova's tables, the book) moves the one
row of ``nova_ext_index_generation`` before it commits: ``generation``
counted up, a new random ``token``. So the pair names one state of what a
list reads:

- the row is locked from that update to the commit, so writers commit in
  the order of their generations, and a reader that sees a generation sees
  every commit up to it and none after;
- a list query begun after reading the pair sees that state or a later
  one, never an earlier one;
- the token is new at each change, so a database restored from a backup,
  or made again, never shows an old pair for other rows.

Which statements change listed rows is read from each statement a
connection runs (``watch``): any write to a table that is not one of the
index's own bookkeeping tables counts, but for what a writer runs
:func:`unlisted` (a check of rows found unchanged).

Each move also says what changed, in ``nova_ext_index_changes``, written
in the same transaction: the uuids of the instances whose rows it wrote,
where the writer named them all (:func:`touched`), else one row with no
uuid, "anything may have changed". So a page kept at one generation can
be brought to a later one by reading again only the instances written
since (:func:`changes`, ``nova_ext.instance_list.page_cache``).
"""

import contextlib
import re
import uuid

from oslo_db import exception as db_exc
from oslo_log import log as logging
import sqlalchemy as sa

from nova_ext.index import schema

LOG = logging.getLogger(__name__)

#: The key in a connection's ``info`` of "this transaction changed listed
#: rows".
WROTE = 'nova_ext_index_changed_listed'
#: The key in a connection's ``info`` of "what runs now changes nothing a
#: list reads" (:func:`unlisted`).
_UNLISTED = 'nova_ext_index_unlisted'

#: The key in a connection's ``info`` of the instances its transaction
#: wrote, where its writer named them (:func:`touched`).
_TOUCHED = 'nova_ext_index_touched'
#: How many generations of changes are kept: a page kept longer ago is
#: listed again.
KEPT = 1024
#: Every how many generations the changes older than KEPT are dropped.
_PRUNE_EVERY = 64
#: A move that names more instances is written as "anything": a page is
#: listed again sooner than brought up to date with that many.
_NAMED_AT_MOST = 500

#: The index's tables no list reads: writing them moves no generation.
BOOKKEEPING = frozenset([
    'nova_ext_index_pending', 'nova_ext_index_holds',
    'nova_ext_index_holders', 'nova_ext_index_service_changes',
    'nova_ext_index_sync', 'nova_ext_index_metrics',
    'nova_ext_index_reconcile', 'nova_ext_index_generation',
    'nova_ext_index_changes', 'nova_ext_index_sequence',
    'nova_ext_index_told', 'alembic_version'])
#: Statements that write nothing (SELECT ... FOR UPDATE reads).
_READS = frozenset(['SELECT', 'PRAGMA', 'SET', 'BEGIN', 'COMMIT', 'ROLLBACK',
                    'SAVEPOINT', 'RELEASE', 'SHOW', 'EXPLAIN', 'START',
                    'XA'])
_TABLE = re.compile(
    r'^\s*(?:INSERT(?:\s+OR\s+\w+)?(?:\s+IGNORE)?\s+INTO|REPLACE\s+INTO|'
    r'UPDATE(?:\s+OR\s+\w+)?|DELETE\s+FROM)\s+[`"]?(\w+)', re.IGNORECASE)


def changes_listed(statement):
    """Whether SQL ``statement`` may change a row a list reads.

    Any statement but a read, unless it names a bookkeeping table as the
    one it writes; what cannot be told counts as a change.
    """
    words = statement.lstrip().split(None, 1)
    if not words or words[0].upper() in _READS:
        return False
    found = _TABLE.match(statement)
    return found is None or found.group(1) not in BOOKKEEPING


def watch(engine):
    """Have ``engine``'s connections note the statements that change rows."""
    def _noted(conn, cursor, statement, parameters, context, executemany):
        if not conn.info.get(_UNLISTED) and changes_listed(statement):
            conn.info[WROTE] = True
    sa.event.listen(engine, 'before_cursor_execute', _noted)


@contextlib.contextmanager
def unlisted(conn):
    """Within, what ``conn`` writes moves no generation.

    For a write to columns of a listed table that no list reads (when the
    book's rows were checked), named by its writer.
    """
    conn.info[_UNLISTED] = True
    try:
        yield conn
    finally:
        conn.info.pop(_UNLISTED, None)


def touched(conn, uuids):
    """Name instances whose rows ``conn``'s transaction writes.

    For a writer whose every write to a listed table is of rows of
    these instances (their copies of Nova's rows, their book entries): a
    transaction that names none is taken to have changed anything.
    """
    conn.info.setdefault(_TOUCHED, set()).update(uuids)


def begun(conn):
    """A writing transaction begins on ``conn``: nothing changed yet."""
    conn.info.pop(WROTE, None)
    conn.info.pop(_TOUCHED, None)


def before_commit(conn):
    """Move the generation if ``conn``'s transaction changed listed rows.

    The last statements of the transaction: the row stays locked for the
    commit only. What changed is written with it (:func:`changes`).
    """
    touched = conn.info.pop(_TOUCHED, None)
    if not conn.info.pop(WROTE, False):
        return
    table = schema.GENERATION
    token = str(uuid.uuid4())
    conn.execute(sa.update(table).where(table.c.id == 1).values(
        generation=table.c.generation + 1, token=token))
    now = conn.execute(sa.select(table.c.generation)
                       .where(table.c.id == 1)).scalar_one()
    if not touched or len(touched) > _NAMED_AT_MOST:
        touched = [None]
    log = schema.CHANGES
    conn.execute(sa.insert(log), [
        {'generation': now, 'token': token, 'uuid': u}
        for u in sorted(touched, key=str)])
    if now % _PRUNE_EVERY == 0:
        conn.execute(sa.delete(log).where(log.c.generation <= now - KEPT))


def _current(name):
    table = schema.GENERATION
    return (sa.select(table.c[name]).where(table.c.id == 1)
            .scalar_subquery())


# Built once: every list request reads them, and a statement kept keeps
# its cache key, which SQLAlchemy would otherwise compute for each.
_READ = sa.select(schema.GENERATION.c.generation,
                  schema.GENERATION.c.token).where(
                      schema.GENERATION.c.id == 1)
_SETTLED = sa.select(sa.exists().select_from(schema.PENDING),
                     _current('generation'), _current('token'),
                     sa.select(sa.func.max(schema.SEQUENCE.c.id))
                     .scalar_subquery())


_CHANGES = sa.select(
    schema.CHANGES.c.generation, schema.CHANGES.c.token,
    schema.CHANGES.c.uuid).where(
        schema.CHANGES.c.generation >= sa.bindparam('since'),
        schema.CHANGES.c.generation <= sa.bindparam('now'))


def read(engine, first):
    """The generation now, ``(generation, token)``; None if unknown.

    Read before a list's query, which then sees this state or a later one.

    :param first: as :func:`settled`'s.
    """
    try:
        row = first(engine, _READ)
    except (sa.exc.SQLAlchemyError, db_exc.DBError) as e:
        LOG.debug('nova_ext index generation unread: %s', e)
        return None
    return None if row is None else (row[0], row[1])


def settled(engine, first):
    """``(whether a change waits, the generation, the ticket)``, at once.

    One statement reads them, so the generation names a state that holds
    every change recorded before it whenever none waits: a change's mark
    leaves the pending table only after the change is applied
    (``nova_ext.index.marks.pending.unmark``). A list that finds none
    waiting needs no :func:`read` of its own. The generation is None if
    unknown; what the database refuses is raised.

    The ticket is the index's sequence number then, as a read's
    (``nova_ext.index.marks.sequence``): an instance the index holds from
    a read with a higher ticket was read after this statement
    (``pending.look``).

    :param first: ``first(engine, statement)``, the first row a statement
        reads (``nova_ext.direct_reads.first``).
    """
    waiting, now, token, ticket = first(engine, _SETTLED)
    return bool(waiting), None if now is None else (now, token), ticket or 0


def changes(engine, since, now, rows):
    """The uuids of the instances written after ``since`` up to ``now``.

    :param since: a generation read before, ``read()``'s pair.
    :param now: a later one.
    :param rows: ``rows(engine, statement, params)``, every row a
        statement reads (``nova_ext.direct_reads.rows``).
    :returns: a set of uuids; None where it cannot be told: a move that
        did not name its instances, one whose changes were dropped (more
        than ``KEPT`` generations ago), or a pair this index's changes do
        not name (another index's, or one from before it was restored).
    """
    if not since[0] < now[0] <= since[0] + KEPT:
        return None
    params = {'since': since[0], 'now': now[0]}
    try:
        read = rows(engine, _CHANGES, params)
    except (sa.exc.SQLAlchemyError, db_exc.DBError) as e:
        LOG.debug('nova_ext index changes unread: %s', e)
        return None
    tokens = dict((g, t) for g, t, _u in read)
    if (tokens.get(since[0]) != since[1] or tokens.get(now[0]) != now[1]
            or len(tokens) != now[0] - since[0] + 1):
        return None
    uuids = set(u for g, _t, u in read if g > since[0])
    return None if None in uuids else uuids
