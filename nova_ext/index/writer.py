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
"""Writing what was read from a cell into the index.

A write never moves an instance back in time: the index remembers, per
instance, the ``updated_at`` of the row it holds and when that row was read,
and a read that is older on both counts is dropped. Duplicate and
out-of-order refreshes are therefore harmless, which is what lets the
notification paths retry freely.

It also remembers a digest of every row it holds of the instance: a read
that finds the same rows only records when it was read (``checked_at``),
and ``read_at``, when the rows were last written, stays: the render cache
keys documents by it.
"""

import collections
import hashlib

import sqlalchemy as sa

from nova_ext.index import db
from nova_ext.index import ids
from nova_ext.index import source

# Typed, so that SQLite hands back datetimes and floats, not strings.
BOOK = sa.table(
    'nova_ext_index_instances',
    sa.column('uuid', sa.String), sa.column('cell_uuid', sa.String),
    sa.column('source_id', sa.Integer),
    sa.column('source_updated_at', sa.DateTime),
    sa.column('read_at', sa.Float), sa.column('deleted_at', sa.DateTime),
    sa.column('digest', sa.String), sa.column('checked_at', sa.Float))

Outcome = collections.namedtuple('Outcome',
                                 'written stale hidden removed missing')


def _is_stale(book, row, read_at):
    held, new = book.source_updated_at, row['updated_at']
    if held is not None and (new is None or new < held):
        return True
    return new == held and read_at < max(book.read_at,
                                         book.checked_at or 0.0)


def digest(read, uuid):
    """A digest of every row ``read`` holds of ``uuid``.

    The cell's rows come in a fixed order (``source.read``), so the same
    rows give the same digest; rows in another order only cost a write.
    """
    parts = [read.cell_uuid, read.instances[uuid]]
    parts.extend(read.children.get(table.name, {}).get(uuid, ())
                 for table, _key in source.CHILDREN)
    parts.append(read.security_groups.get(uuid, ()))
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def _book(conn, uuids):
    rows = conn.execute(sa.select(BOOK).where(BOOK.c.uuid.in_(uuids)))
    return {row.uuid: row for row in rows}


def delete_rows(conn, uuids):
    if not uuids:
        return
    assoc = source.SG_ASSOCIATIONS
    group_ids = [r[0] for r in conn.execute(
        sa.select(assoc.c.security_group_id).where(
            assoc.c.instance_uuid.in_(uuids)))]
    if group_ids:
        conn.execute(sa.delete(source.SECURITY_GROUPS).where(
            source.SECURITY_GROUPS.c.id.in_(group_ids)))
    conn.execute(sa.delete(assoc).where(assoc.c.instance_uuid.in_(uuids)))
    for table, key in source.CHILDREN:
        conn.execute(sa.delete(table).where(table.c[key].in_(uuids)))
    conn.execute(sa.delete(source.INSTANCES).where(
        source.INSTANCES.c.uuid.in_(uuids)))
    conn.execute(sa.delete(BOOK).where(BOOK.c.uuid.in_(uuids)))


def _without_id(row):
    return {k: v for k, v in row.items() if k != 'id'}


def _instance(row, cell_id):
    values = dict(row)
    values['id'] = ids.index_id(row['id'], cell_id)
    if row['deleted']:
        # Nova marks a deleted row with deleted = id; keep that true.
        values['deleted'] = values['id']
    return values


def _insert(conn, writes, digests):
    """Insert what each read holds of its uuids, one statement per table.

    :param writes: ``[(read, uuids)]``, each read a cell's.
    :param digests: ``{uuid: digest()}`` of the uuids written.

    Each statement is executed for all its rows at once (executemany), and
    takes its values as parameters, so that it is compiled once per table
    rather than once per row, whatever the number of cells.
    """
    writes = [(read, uuids) for read, uuids in writes if uuids]
    if not writes:
        return
    conn.execute(sa.insert(source.INSTANCES), [
        _instance(read.instances[uuid], read.cell_id)
        for read, uuids in writes for uuid in uuids])
    for table, _key in source.CHILDREN:
        rows = [_without_id(r) for read, uuids in writes
                for uuid in uuids
                for r in read.children.get(table.name, {}).get(uuid, ())]
        if rows:
            conn.execute(sa.insert(table), rows)
    for read, uuids in writes:
        for uuid in uuids:
            for assoc, group in read.security_groups.get(uuid, ()):
                # Security group ids collide across cells too; each
                # instance gets its own copy of the groups it is in.
                result = conn.execute(sa.insert(source.SECURITY_GROUPS),
                                      _without_id(group))
                values = _without_id(assoc)
                values['security_group_id'] = result.inserted_primary_key[0]
                conn.execute(sa.insert(source.SG_ASSOCIATIONS), values)
    conn.execute(sa.insert(BOOK), [
        {'uuid': uuid, 'cell_uuid': read.cell_uuid,
         'source_id': read.instances[uuid]['id'],
         'source_updated_at': read.instances[uuid]['updated_at'],
         'read_at': read.read_at,
         'deleted_at': read.instances[uuid]['deleted_at'],
         'digest': digests[uuid]}
        for read, uuids in writes for uuid in uuids])


def _touch(conn, reads):
    """Record when rows that the index holds already were read again.

    :param reads: ``[(read_at, uuid)]``; each is newer than the book's
        times (else it would be stale).
    """
    if reads:
        conn.execute(sa.update(BOOK).where(
            BOOK.c.uuid == sa.bindparam('touched')).values(
            checked_at=sa.bindparam('at')),
            [{'touched': uuid, 'at': at} for at, uuid in reads])


def apply(engine, read, uuids):
    """Make the index hold what ``read`` found for ``uuids``.

    ``uuids`` are the instances that were asked of the cell; those the cell
    no longer has leave the index if the index had them from that cell.

    :returns: an :class:`Outcome` of uuid lists.
    """
    return apply_reads(engine, [(read, uuids)])


def apply_reads(engine, reads):
    """:func:`apply` for several cells' reads, in one transaction.

    :param reads: ``[(read, uuids)]``, the uuids asked of each read's cell.
    :returns: an :class:`Outcome` of uuid lists, over every read.
    """
    out = Outcome([], [], [], [], [])
    with db.begin_write(engine) as conn:
        book = _book(conn, [u for _read, uuids in reads for u in uuids])
        writes, remove, same, digests = [], [], [], {}
        for read, uuids in reads:
            write = []
            for uuid in uuids:
                row, held = read.instances.get(uuid), book.get(uuid)
                if row is None:
                    if held is not None and held.cell_uuid == read.cell_uuid:
                        remove.append(uuid)
                    else:
                        out.missing.append(uuid)
                elif (held is not None and held.cell_uuid != read.cell_uuid
                        and row['hidden']):
                    # A cross-cell move leaves a hidden copy behind; the
                    # visible copy in the other cell is the instance.
                    out.hidden.append(uuid)
                elif (held is not None and held.cell_uuid == read.cell_uuid
                        and _is_stale(held, row, read.read_at)):
                    out.stale.append(uuid)
                else:
                    digests[uuid] = digest(read, uuid)
                    if held is not None and held.digest == digests[uuid]:
                        same.append((read.read_at, uuid))
                    else:
                        write.append(uuid)
            writes.append((read, write))
        written = [uuid for _read, write in writes for uuid in write]
        delete_rows(conn, written + remove)
        out.removed.extend(remove)
        _insert(conn, writes, digests)
        _touch(conn, same)
        out.written.extend(written)
        out.written.extend(uuid for _at, uuid in same)
    return out
