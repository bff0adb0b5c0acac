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
"""Filling the index from the cell databases: full sync and verify.

Both stream each cell in id order, one batch at a time, straight from the
cell database (never through the Nova API, which would cost a Nova list per
batch and could not see what the API hides). A sync keeps a cursor per cell
in the index, so an interrupted sync resumes where it stopped.

Deleted instances past ``[nova_ext_index]deleted_retention`` are not copied
(purge would only drop them again), unless the index holds them other than
as such a tombstone (see :func:`verify.past_retention`).
"""

import collections
import time

from nova import context as nova_context
from nova import objects
import sqlalchemy as sa

from nova_ext.index.apply import refresh
from nova_ext.index.apply import source
from nova_ext.index.apply import writer
from nova_ext.index import db
from nova_ext.index.marks import pending
from nova_ext.index.marks import sequence
from nova_ext.index.repair import verify
from nova_ext.index import schema


def cells(ctx, cell_uuid=None):
    """Every cell mapping (cell0 included), or the one named."""
    mappings = objects.CellMappingList.get_all(ctx)
    if cell_uuid is None:
        return list(mappings)
    return [c for c in mappings if c.uuid == cell_uuid or c.name == cell_uuid]


def _cursor(engine, cell_uuid, restart):
    with db.begin_write(engine) as conn:
        row = conn.execute(sa.select(schema.SYNC_CURSORS).where(
            schema.SYNC_CURSORS.c.cell_uuid == cell_uuid)).first()
        if row is not None and not restart and row.finished_at is None:
            return row.last_source_id
        conn.execute(sa.delete(schema.SYNC_CURSORS).where(
            schema.SYNC_CURSORS.c.cell_uuid == cell_uuid))
        conn.execute(sa.insert(schema.SYNC_CURSORS).values(
            cell_uuid=cell_uuid, last_source_id=0, started_at=time.time(),
            finished_at=None))
        return 0


def _advance(engine, cell_uuid, last_id, finished=False):
    values = {'last_source_id': last_id}
    if finished:
        values['finished_at'] = time.time()
    with db.begin_write(engine) as conn:
        conn.execute(sa.update(schema.SYNC_CURSORS).where(
            schema.SYNC_CURSORS.c.cell_uuid == cell_uuid).values(**values))


def _held(engine, cell_uuid, uuids):
    """``{uuid: deleted_at}`` of ``uuids`` the index holds from a cell."""
    if not uuids:
        return {}
    book = schema.INSTANCES
    with engine.connect() as conn:
        return {row.uuid: row.deleted_at for row in conn.execute(
            sa.select(book.c.uuid, book.c.deleted_at).where(
                book.c.cell_uuid == cell_uuid,
                book.c.uuid.in_(sorted(uuids))))}


def sync_cell(ctx, conf, cell, restart=False, since=None, progress=None):
    """Copy one cell's instances into the index.

    :param since: only instances changed (created, updated or deleted) at
        or after this datetime.
    :param progress: called with the number of instances of each batch.
    :returns: a Counter of outcomes (written, stale, hidden, ...;
        ``expired``: tombstones past retention left out).
    """
    engine = db.get_engine(conf)
    batch = conf.nova_ext_index.batch_size
    cutoff = verify.tombstone_cutoff(conf)
    totals = collections.Counter()
    after = _cursor(engine, cell.uuid, restart or since is not None)
    with nova_context.target_cell(ctx.elevated(read_deleted='yes'),
                                  cell) as cctxt:
        while True:
            rows = source.uuids_after(cctxt, after, batch, since=since)
            if not rows:
                break
            found = [row[1:] for row in rows]
            old = {u for u, deleted, deleted_at in found
                   if verify.expired(deleted, deleted_at, cutoff)}
            skipped = verify.past_retention(
                found, _held(engine, cell.uuid, old), cutoff)
            totals['expired'] += len(skipped)
            uuids = [u for u, _deleted, _at in found if u not in skipped]
            read = source.read(cctxt, cell, uuids, sequence.take(engine))
            outcome = writer.apply(engine, read, uuids)
            if outcome.refused:
                # Marked, as a change the index could not record: lists
                # are Nova's until the row is mended and read again.
                now = time.time()
                pending.mark(engine, [(u, now) for u in outcome.refused])
                refresh.warn_refused([(read, uuids)])
            for field in outcome._fields:
                totals[field] += len(getattr(outcome, field))
            after = rows[-1][0]
            _advance(engine, cell.uuid, after)
            if progress is not None:
                progress(len(rows))
    _advance(engine, cell.uuid, after, finished=True)
    return totals


def count_cell(ctx, cell, since=None):
    with nova_context.target_cell(ctx.elevated(read_deleted='yes'),
                                  cell) as cctxt:
        return source.count(cctxt, since=since)
