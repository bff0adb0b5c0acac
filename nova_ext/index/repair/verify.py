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
"""Comparing the index with the cells, and healing what differs.

``verify`` streams one cell and the index's rows of that cell side by side,
in the cell's id order, one batch at a time, and reports instances the
index lacks, holds in an older version (their rows, or the digest of
their RequestSpec in the API database), or holds although the cell no
longer has them (archived). With ``fix`` the differences are marked pending
and re-read, exactly as a notification would have made them; this is the
reconcile pass that heals dropped notifications, changes Nova makes
without one (tags, for one), and archiving.

Deleted instances older than ``[nova_ext_index]deleted_retention`` days are
no longer the index's to keep (:func:`purge_tombstones` drops them), even
while Nova has not archived their rows: verify skips them, and leaves those
the index still holds as such tombstones to the purge.
"""

import collections
import datetime

from nova import context as nova_context
import sqlalchemy as sa

from nova_ext.index.apply import refresh
from nova_ext.index.apply import source
from nova_ext.index.apply import writer
from nova_ext.index import db
from nova_ext.index import schema

BOOK = schema.INSTANCES

#: How many differing uuids a report keeps as examples.
SAMPLES = 10


class Report(object):
    """What verify found in one cell."""

    def __init__(self, cell):
        self.cell_uuid = cell.uuid
        self.cell_name = cell.name
        self.counts = collections.Counter(checked=0, missing=0, stale=0,
                                          extra=0, fixed=0, expired=0)
        self.samples = collections.defaultdict(list)

    def add(self, kind, uuid):
        self.counts[kind] += 1
        if len(self.samples[kind]) < SAMPLES:
            self.samples[kind].append(uuid)

    @property
    def drift(self):
        return self.counts['missing'] + self.counts['stale'] + \
            self.counts['extra']

    def as_dict(self):
        return {'cell_uuid': self.cell_uuid, 'cell_name': self.cell_name,
                'counts': dict(self.counts),
                'samples': {k: v for k, v in self.samples.items()}}


def tombstone_cutoff(conf, now=None):
    """When a tombstone outlives ``deleted_retention``.

    :returns: the ``deleted_at`` before which a deleted instance is no
        longer kept in the index (naive UTC), or None when retention is 0
        (tombstones then stay until Nova archives them).
    """
    days = conf.nova_ext_index.deleted_retention
    if not days:
        return None
    now = now or datetime.datetime.utcnow()
    return now - datetime.timedelta(days=days)


def expired(deleted, deleted_at, cutoff):
    """Whether a cell's instance row is a tombstone past ``cutoff``."""
    return (cutoff is not None and bool(deleted) and
            deleted_at is not None and deleted_at < cutoff)


def _held(conn, cell_uuid, low, high):
    """``{uuid: deleted_at}`` the index holds of a cell's id range."""
    query = sa.select(BOOK.c.uuid, BOOK.c.deleted_at).where(
        BOOK.c.cell_uuid == cell_uuid, BOOK.c.source_id > low)
    if high is not None:
        query = query.where(BOOK.c.source_id <= high)
    return {row.uuid: row.deleted_at for row in conn.execute(query)}


def past_retention(rows, held, cutoff):
    """The uuids of a cell's ``rows`` that sync and verify leave alone.

    A tombstone past the cutoff need not be in the index; if the index
    still holds it as such a tombstone, purge drops it. One the index holds
    otherwise (alive, say: its deletion was never seen) is not left alone,
    so that its tombstone replaces it and is then purged.

    :param rows: ``(uuid, deleted, deleted_at)`` of the cell's rows.
    :param held: ``{uuid: deleted_at}`` the index holds from that cell.
    """
    skipped = set()
    for uuid, deleted, deleted_at in rows:
        if not expired(deleted, deleted_at, cutoff):
            continue
        if uuid not in held or expired(True, held[uuid], cutoff):
            skipped.add(uuid)
    return skipped


def _compare(cctxt, engine, cell_uuid, rows, after, high, cutoff, report):
    with engine.connect() as conn:
        held = _held(conn, cell_uuid, after, high)
    skipped = past_retention(
        [(r['uuid'], r['deleted'], r['deleted_at']) for r in rows], held,
        cutoff)
    report.counts['expired'] += len(skipped)
    uuids = [row['uuid'] for row in rows if row['uuid'] not in skipped]
    theirs = source.cell_fingerprints(cctxt, uuids)
    specs = source.specs_of(cctxt, uuids)
    with engine.connect() as conn:
        mine = source.fingerprints(conn.execute, uuids)
        my_specs = writer.spec_digests(conn, uuids)
    differing = []
    for uuid in uuids:
        report.counts['checked'] += 1
        if uuid not in mine:
            report.add('missing', uuid)
        elif (mine[uuid] != theirs.get(uuid) or my_specs.get(uuid) !=
              writer.spec_digest(specs.get(uuid))):
            report.add('stale', uuid)
        else:
            continue
        differing.append(uuid)
    for uuid in set(held) - set(uuids) - skipped:
        # In the index, no longer in the cell: archived or moved.
        report.add('extra', uuid)
        differing.append(uuid)
    return differing


def verify_cell(ctx, conf, cell, fix=False):
    """Compare one cell with the index; returns a :class:`Report`."""
    engine = db.get_engine(conf)
    report = Report(cell)
    batch = conf.nova_ext_index.batch_size
    cutoff = tombstone_cutoff(conf)
    after = 0
    with nova_context.target_cell(ctx.elevated(read_deleted='yes'),
                                  cell) as cctxt:
        while True:
            rows = source.versions_after(cctxt, after, batch)
            high = rows[-1]['id'] if rows else None
            differing = _compare(cctxt, engine, cell.uuid, rows, after,
                                 high, cutoff, report)
            if fix and differing:
                # Their rows differ from the cell's, whatever the book says.
                totals, _failed = refresh.refresh_now(ctx, conf, differing,
                                                      rewrite=True)
                # Stale: the index holds a read begun after this one began,
                # so after the comparison; a list request's catch-up or the
                # indexer wrote it meanwhile.
                report.counts['fixed'] += (totals.written + totals.removed +
                                           totals.stale)
            if not rows:
                break
            after = high
    return report


def purge_tombstones(conf, now=None):
    """Drop deleted instances older than ``deleted_retention`` days.

    :returns: how many left the index; 0 when retention is 0 (tombstones
        then stay until Nova archives them).
    """
    cutoff = tombstone_cutoff(conf, now)
    if cutoff is None:
        return 0
    engine = db.get_engine(conf)
    with db.begin_write(engine) as conn:
        uuids = [r.uuid for r in conn.execute(sa.select(BOOK.c.uuid).where(
            BOOK.c.deleted_at.isnot(None), BOOK.c.deleted_at < cutoff))]
        for start in range(0, len(uuids), 500):
            writer.delete_rows(conn, uuids[start:start + 500])
    return len(uuids)
