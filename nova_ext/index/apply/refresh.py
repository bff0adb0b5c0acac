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
"""Re-reading changed instances from their cells into the index."""

import collections
import functools
import time

from nova import exception as nova_exception
from nova import objects
from oslo_db import exception as db_exc
from oslo_log import log as logging
import sqlalchemy as sa

from nova_ext.index.apply import cell_probe
from nova_ext.index.apply import source
from nova_ext.index.apply import turn
from nova_ext.index.apply import writer
from nova_ext.index import db
from nova_ext.index.marks import pending
from nova_ext.index.marks import sequence
from nova_ext.index.marks import watch
from nova_ext.index import schema
from nova_ext.seams.internals import api_db
from nova_ext.seams.internals import cells as nova_cells

LOG = logging.getLogger(__name__)

_ERRORS = (sa.exc.SQLAlchemyError, db_exc.DBError,
           nova_exception.NovaException)

Totals = collections.namedtuple('Totals',
                                'written stale hidden removed missing failed')


def _empty():
    return Totals(0, 0, 0, 0, 0, 0)


def _add(totals, outcome):
    return totals._replace(
        written=totals.written + len(outcome.written),
        stale=totals.stale + len(outcome.stale),
        hidden=totals.hidden + len(outcome.hidden),
        removed=totals.removed + len(outcome.removed),
        missing=totals.missing + len(outcome.missing))


def refresh(ctx, conf, uuids, rewrite=False, answered=None):
    """Make the index hold the current state of the instances ``uuids``.

    Each instance is read from the cell its instance mapping names. An
    instance without a mapping has been archived (or never existed) and
    leaves the index. One whose mapping has no cell yet is looked for in
    every cell: Nova lists what the cells hold, whatever the mapping says,
    and its conductor creates the instance in a cell before it maps it
    there. Found in none, it is a build request only, which Nova lists
    from the API database, and it leaves the index (a server rebuilt from
    cell0 is hard-deleted there, without a delete event).

    :param rewrite: as ``writer.apply_reads``.
    :param answered: None, or a dict to fill with ``{cell uuid: whether it
        answered}`` for every cell Nova lists: the pass that reads the
        instances then asks each other cell the trivial query of a list
        request's check of the cells, and is that check (see
        :func:`_every_cell`).
    :returns: ``(Totals, failed uuids)``; a cell that cannot be read fails
        its uuids without failing the others.
    """
    uuids = sorted(set(uuids))
    engine = db.get_engine(conf)
    totals, failed = _empty(), []
    if not uuids:
        return totals, failed
    ctx = ctx.elevated(read_deleted='yes')
    # Taken before anything is read, the instance mappings included: see
    # nova_ext.index.marks.sequence.
    ticket = sequence.take(engine)
    mapped, unsure = locate(ctx, uuids)
    failed.extend(unsure)
    by_cell = _by_cell(mapped)
    unmapped = [u for u in uuids
                if mapped.get(u) is None and u not in failed]
    if unmapped:
        totals = totals._replace(removed=remove(engine, unmapped))
    read = functools.partial(source.read_cell, ticket=ticket)
    if answered is None:
        results = _each_cell(ctx, by_cell, read)
    else:
        results = _every_cell(ctx, conf, by_cell, read, answered)
    reads = []
    for cell_uuid, cell_uuids in sorted(by_cell.items()):
        result = results.get(cell_uuid)
        if isinstance(result, source.CellRead):
            reads.append((result, cell_uuids))
            continue
        if cell_uuid not in results:
            result = nova_exception.CellMappingNotFound(uuid=cell_uuid)
        else:
            result = nova_cells.failure(result) or result
        LOG.warning('nova_ext index: could not refresh %d instances of '
                    'cell %s: %s', len(cell_uuids), cell_uuid, result)
        failed.extend(cell_uuids)
    if reads:
        totals = _record(ctx, engine, reads, rewrite, totals, failed)
    return totals._replace(failed=len(failed)), failed


def _record(ctx, engine, reads, rewrite, totals, failed):
    """Write the cells' ``reads``, with their specs, to the index.

    :returns: ``totals`` with the outcome added; the reads' uuids are
        added to ``failed`` instead if either database fails.
    """
    read_uuids = [u for _read, cell_uuids in reads for u in cell_uuids]
    try:
        # Outside the cells' pass, in one statement: a failure of the API
        # database is not one of the cell's.
        source.add_specs(ctx, [result for result, _uuids in reads])
    except _ERRORS as e:
        LOG.warning('nova_ext index: could not read the request specs of '
                    '%d refreshed instances from the API database: %s',
                    len(read_uuids), e)
        failed.extend(read_uuids)
        return totals
    # Every cell's in one index transaction: one commit, and one
    # statement per table, however many cells the instances are in.
    try:
        outcome = writer.apply_reads(engine, reads, rewrite)
    except _ERRORS as e:
        LOG.warning('nova_ext index: could not write %d refreshed '
                    'instances: %s', len(read_uuids), e)
        failed.extend(read_uuids)
        return totals
    failed.extend(outcome.refused)
    warn_refused(reads)
    return _add(totals, outcome)


#: ``(uuid, why)`` of the refusals this process logged: each list request
#: reads a refused row again, and logs it only the first time.
_WARNED = set()
MAX_WARNED = 10000


def warn_refused(reads):
    """Log each instance of ``reads`` whose row Nova cannot read, once."""
    for result, _uuids in reads:
        for uuid, why in sorted(result.refused.items()):
            if (uuid, why) in _WARNED:
                continue
            if len(_WARNED) >= MAX_WARNED:
                _WARNED.clear()
            _WARNED.add((uuid, why))
            LOG.warning('nova_ext index: instance %s of cell %s holds a '
                        'value Nova cannot read (%s); its change waits, '
                        'and Nova answers every list until the row is '
                        'mended', uuid, result.cell_uuid, why)


def refresh_now(ctx, conf, uuids, rewrite=False):
    """Mark ``uuids`` pending, then refresh them at once.

    For changes that come with no notification. Where the refresh fails,
    the mark stays, for the indexer to apply.

    :param rewrite: as ``writer.apply_reads``.
    :returns: ``(Totals, failed uuids)``, as :func:`refresh`.
    """
    engine = db.get_engine(conf)
    now = time.time()
    number = pending.mark(engine, [(u, now) for u in uuids])
    totals, failed = refresh(ctx, conf, uuids, rewrite=rewrite)
    failed_set = set(failed)
    pending.unmark(engine, {u: number for u in uuids
                            if u not in failed_set})
    return totals, failed


def locate(ctx, uuids):
    """The cell of each of ``uuids`` in which Nova lists it.

    That of its instance mapping; for an instance whose mapping names no
    cell yet, the cell that holds it, if any.

    :returns: ``({uuid: cell uuid}, [uuids that could not be located])``,
        without the uuids that have no mapping, nor those in no cell.
    """
    mapped = api_db.cells_of(uuids)
    unplaced = [u for u, cell_uuid in mapped.items() if cell_uuid is None]
    if not unplaced:
        return mapped, []
    found, unsure = _find_in_cells(ctx, unplaced)
    mapped.update(found)
    return {u: c for u, c in mapped.items() if c is not None}, unsure


def _find_in_cells(ctx, uuids):
    """Which cell holds each of ``uuids``, whose mappings name none.

    :returns: ``({uuid: cell uuid} of those found, [uuids of a cell that
        could not be read and were found in no other])``.
    """
    cells = objects.CellMappingList.get_all(ctx)
    results = _each_cell(ctx, {cell.uuid: uuids for cell in cells},
                         source.present, mappings=cells)
    found, unread = {}, False
    for cell_uuid, result in sorted(results.items()):
        if isinstance(result, set):
            found.update((uuid, cell_uuid) for uuid in result)
        else:
            unread = True
    if unread or len(results) < len(cells):
        LOG.warning('nova_ext index: a cell could not be read to look for '
                    'instances being scheduled')
        return found, [u for u in uuids if u not in found]
    return found, []


def in_cells(ctx, mapped):
    """The uuids whose instance row is in the cell their mapping names.

    :param mapped: ``{uuid: cell uuid}``, as :func:`locate` gives.
    :returns: a set of uuids, or None if a cell could not be read.
    """
    results = _each_cell(ctx.elevated(read_deleted='yes'), _by_cell(mapped),
                         source.present)
    found = set()
    for result in results.values():
        if not isinstance(result, set):
            return None
        found |= result
    return found


def _by_cell(mapped):
    """``{cell uuid: [uuid]}`` of ``{uuid: cell uuid or None}``."""
    by_cell = collections.defaultdict(list)
    for uuid, cell_uuid in mapped.items():
        if cell_uuid is not None:
            by_cell[cell_uuid].append(uuid)
    return by_cell


def _mappings(ctx, cell_uuids):
    """The cell mappings of ``cell_uuids``, as far as they exist.

    Those Nova's list reads, which this process loaded once
    (``nova.context.CELLS``): a query of the API database per catch-up
    would cost more, the more cells there are. A cell mapped since then
    is looked up.
    """
    known = {cell.uuid: cell for cell in nova_cells.all_cells()}
    if not set(cell_uuids) <= set(known):
        known = {cell.uuid: cell
                 for cell in objects.CellMappingList.get_all(ctx)}
    return {uuid: known[uuid] for uuid in cell_uuids if uuid in known}


def _each_cell(ctx, by_cell, read, mappings=None):
    """``read(cctxt, cell, uuids)`` in each cell of ``by_cell``, in parallel.

    As Nova's own list reads its cells.

    :param mappings: every cell's mapping, if the caller has them.
    :returns: ``{cell uuid: result}``; a result is the exception a read
        raised, or Nova's sentinel of a cell that did not answer. A cell
        without a mapping has none.
    """
    if not by_cell:
        return {}
    if mappings is None:
        cells = _mappings(ctx, by_cell)
    else:
        cells = {cell.uuid: cell for cell in mappings
                 if cell.uuid in by_cell}
    return _scatter(ctx, cells, by_cell, read)


def _every_cell(ctx, conf, by_cell, read, answered):
    """:func:`_each_cell`, and the trivial query in every other cell.

    A list request asks every cell a trivial query before it reads the
    index (``nova_ext.instance_list.cellhealth``). A cell read for a
    catch-up answers as much, so in one pass the cells holding changes
    are read and only the others are asked: the request queries each cell
    once, the more cells the more that saves. Within ``query_timeout``,
    the time a cell has to answer the request's check.

    :param answered: a dict, filled with ``{cell uuid: whether it
        answered}`` for every cell of the pass.
    """
    cells = {cell.uuid: cell for cell in nova_cells.all_cells()}
    unknown = [uuid for uuid in by_cell if uuid not in cells]
    if unknown:
        cells.update(_mappings(ctx, unknown))
    results = _scatter(ctx, cells, by_cell, read,
                       conf.nova_ext_index.query_timeout)
    answered.update((uuid, nova_cells.failure(result) is None)
                    for uuid, result in results.items())
    return results


class _Pass(object):
    """What a pass over cells does in each: a read, or the trivial query.

    Run through a bound method: Nova's DownCellFixture, with which tests
    take cells down, stubs scatter-gather for those only.
    """

    def __init__(self, cells, by_cell, read):
        self.cells = cells
        self.by_cell = by_cell
        self.read = read

    def run(self, cctxt):
        cell = self.cells[cctxt.cell_uuid]
        try:
            if cell.uuid in self.by_cell:
                cell_probe.before_reads(cctxt, cell)
                return self.read(cctxt, cell, self.by_cell[cell.uuid])
            cell_probe.ask(cctxt, cell)
            return True
        except _ERRORS as e:
            return e


def _scatter(ctx, cells, by_cell, read, timeout=None):
    return nova_cells.scatter(ctx, [cells[c] for c in sorted(cells)],
                              _Pass(cells, by_cell, read).run,
                              timeout=timeout)


def remove(engine, uuids):
    """Drop instances from the index; returns how many it held.

    Run again if another writer got in first: not a failure of any cell,
    whose marks would wait for the worker's retry.
    """
    def _remove(conn):
        held = [r.uuid for r in conn.execute(
            sa.select(schema.INSTANCES.c.uuid).where(
                schema.INSTANCES.c.uuid.in_(list(uuids))))]
        writer.delete_rows(conn, held)
        return len(held)
    return db.write(engine, _remove)


def apply_marks(ctx, conf, taken, answered=None):
    """Re-read the instances of marks taken, then unmark what was applied.

    :param taken: ``{uuid: seq}``, as ``pending.take`` gives.
    :param answered: as for :func:`refresh`.
    :returns: the set of uuids that failed; their marks stay.
    """
    _totals, failed = refresh(ctx, conf, taken, answered=answered)
    failed = set(failed)
    pending.unmark(db.get_engine(conf), {u: t for u, t in taken.items()
                                         if u not in failed})
    return failed


def process_pending(ctx, conf, limit=None, skip=None, done=None):
    """Apply up to ``limit`` pending marks (default: one batch).

    Marks that fail (their cell cannot be read) stay pending, their
    attempts counted.

    :param skip: a set of uuids not to take, or None; the uuids whose marks
        fail in this pass are added to it. A caller that passes the same
        set pass after pass takes every mark once, and then no more.
    :param done: likewise, a set to which the uuids applied are added, and
        which are not taken again: a held mark stays after it is applied
        (``pending.unmark``), and would be taken pass after pass until its
        Nova transaction ends.
    :returns: the number of marks applied: 0 when there were none to take,
        and when every mark taken failed (a cell is down), so that
        ``while process_pending(...)`` does not spin on failing marks.
    """
    engine = db.get_engine(conf)
    watch.get_watch(conf).settle(engine)
    passed = set(skip or ()) | set(done or ())
    # Not even the turn where another applied them since the wake: the
    # others wait for a holder with nothing to do as for any other.
    if pending.none_left(engine, passed):
        return 0
    with turn.held(engine, conf.nova_ext_index.query_timeout) as held:
        with held.reading() as conn:
            taken = pending.take_on(
                conn, limit or conf.nova_ext_index.batch_size, skip=passed)
        if not taken:
            return 0
        failed = apply_marks(ctx, conf, taken)
    pending.failed(engine, failed)
    if skip is not None:
        skip.update(failed)
    if done is not None:
        done.update(set(taken) - failed)
    return len(taken) - len(failed)
