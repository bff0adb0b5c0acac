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
instance, the ticket of the read it holds (``nova_ext.index.marks.sequence``),
and a read with a lower ticket is dropped. No clock takes part: Nova's
``updated_at`` is the clock of whichever host wrote, and a change made on
a host whose clock is behind carries an older stamp than the change
before it. Duplicate and out-of-order refreshes are therefore harmless,
which is what lets the notification paths retry freely.

It also remembers a digest of the rows it holds of the instance, table by
table: a read that finds the same rows only records when it was read
(``checked_at``), and ``read_at``, when the rows were last written, stays:
the render cache keys documents by it. A read that finds some tables'
rows changed replaces those tables' rows only.

The instance's RequestSpec, read from the API database with its rows, is
one more part whose digest the book keeps (last, :data:`SPEC_AT`), without
its text: a page reads each server's spec digest with its row, and reads
from the API database only the specs whose digest it has not seen
(``nova_ext.instance_list.render.request_specs``).
"""

import collections
import functools
import hashlib

import sqlalchemy as sa

from nova_ext.index.apply import source
from nova_ext.index import db
from nova_ext.index import generation
from nova_ext.index import ids
from nova_ext.index import schema


#: What the index holds of an instance, in parts that are written apart:
#: its row, its rows of each related table, its security groups, and the
#: digest alone of its request spec.
PARTS = (('instances',) + tuple(table.name for table, _key in source.CHILDREN)
         + ('security_groups', 'request_spec'))
#: Hex digits of a part's digest in the book's ``digest``: 80 bits.
WIDTH = 20
#: Where the request spec's digest starts in the book's ``digest``, from 1
#: (SQL's ``substr``); a book digest that ends before has none.
SPEC_AT = PARTS.index('request_spec') * WIDTH + 1

Outcome = collections.namedtuple(
    'Outcome', 'written stale hidden removed missing refused')


def _is_stale(book, read):
    """Whether the index holds a read that began after ``read`` began.

    Two reads with the same ticket began with no change marked between
    them, so either may be written: a change between them is marked after
    both began, and read again.
    """
    return book.ticket is not None and read.ticket < book.ticket


def _rows_of(read, uuid, part):
    if part == 'instances':
        return read.instances[uuid]
    if part == 'security_groups':
        return read.security_groups.get(uuid, ())
    if part == 'request_spec':
        return read.request_specs.get(uuid)
    return read.children.get(part, {}).get(uuid, ())


def part_digest(rows):
    """The digest of one part's rows, as the book keeps it."""
    return hashlib.blake2b(repr(rows).encode(),
                           digest_size=WIDTH // 2).hexdigest()


def spec_digest(stored):
    """The digest the book keeps of a stored spec (None: no spec)."""
    return part_digest(stored)


def digest(read, uuid):
    """The digest of each part ``read`` holds of ``uuid``, end to end.

    The cell's rows come in a fixed order (``source.read``), so the same
    rows give the same digests; rows in another order only cost a write.
    """
    return ''.join(part_digest(_rows_of(read, uuid, part)) for part in PARTS)


def book_spec_digest(book_digest):
    """The request spec's digest in a book's ``digest``, or None."""
    found = (book_digest or '')[SPEC_AT - 1:SPEC_AT - 1 + WIDTH]
    return found if len(found) == WIDTH else None


def spec_digests(conn, uuids):
    """``{uuid: its spec's digest, or None}`` as the index's book keeps them.

    For ``uuids`` the book holds; ``conn`` is a connection to the index.
    """
    uuids = list(uuids)
    if not uuids:
        return {}
    book = schema.INSTANCES
    return {row.uuid: book_spec_digest(row.digest)
            for row in conn.execute(sa.select(book.c.uuid, book.c.digest)
                                    .where(book.c.uuid.in_(uuids)))}


def _changed(held, new):
    """The parts whose rows differ from those the book says are held.

    All of them where the book has no digest of this layout.
    """
    old = held.digest
    if not old or len(old) != len(new):
        return PARTS
    return tuple(part for n, part in enumerate(PARTS)
                 if old[n * WIDTH:(n + 1) * WIDTH] !=
                 new[n * WIDTH:(n + 1) * WIDTH])


def _book(conn, uuids):
    # Locked until this transaction ends: on MySQL and PostgreSQL another
    # writer of the same instances waits here, then finds what this one
    # wrote, whose ticket may make its own read stale. Without the lock,
    # both would decide on the book as it was, and the older read's
    # changed columns could land over the newer read's row. (SQLite's
    # writers hold its one write lock from their first statement.)
    rows = conn.execute(sa.select(schema.INSTANCES)
                        .where(schema.INSTANCES.c.uuid.in_(uuids))
                        .with_for_update())
    return {row.uuid: row for row in rows}


def delete_rows(conn, uuids):
    """Drop every row the index holds of ``uuids``, book included."""
    generation.touched(conn, uuids)
    _delete(conn, {part: uuids for part in PARTS})
    _delete_book(conn, uuids)


def _delete(conn, by_part):
    """Drop the rows of each part of its uuids.

    :param by_part: ``{part: [uuid]}``.
    """
    assoc = source.SG_ASSOCIATIONS
    grouped = by_part.get('security_groups')
    if grouped:
        group_ids = [r[0] for r in conn.execute(
            sa.select(assoc.c.security_group_id).where(
                assoc.c.instance_uuid.in_(grouped)))]
        if group_ids:
            conn.execute(sa.delete(source.SECURITY_GROUPS).where(
                source.SECURITY_GROUPS.c.id.in_(group_ids)))
        conn.execute(sa.delete(assoc).where(
            assoc.c.instance_uuid.in_(grouped)))
    for table, key in source.CHILDREN:
        if by_part.get(table.name):
            conn.execute(sa.delete(table).where(
                table.c[key].in_(by_part[table.name])))
    if by_part.get('instances'):
        conn.execute(sa.delete(source.INSTANCES).where(
            source.INSTANCES.c.uuid.in_(by_part['instances'])))


def _delete_book(conn, uuids):
    if uuids:
        conn.execute(sa.delete(schema.INSTANCES).where(
            schema.INSTANCES.c.uuid.in_(uuids)))


def _without_id(row):
    return {k: v for k, v in row.items() if k != 'id'}


def _instance(row, cell_id):
    values = dict(row)
    values['id'] = ids.index_id(row['id'], cell_id)
    if row['deleted']:
        # Nova marks a deleted row with deleted = id; keep that true.
        values['deleted'] = values['id']
    return values


#: One instance to write: what was read of it, the parts whose rows are
#: written, and its digest.
Write = collections.namedtuple('Write', 'read uuid parts digest')


def _insert(conn, writes):
    """Insert the rows of each write's parts, one statement per table.

    Each statement is executed for all its rows at once (executemany), and
    takes its values as parameters, so that it is compiled once per table
    rather than once per row, whatever the number of cells.
    """
    rows = [_instance(w.read.instances[w.uuid], w.read.cell_id)
            for w in writes if 'instances' in w.parts]
    if rows:
        conn.execute(sa.insert(source.INSTANCES), rows)
    for table, _key in source.CHILDREN:
        rows = [_without_id(r) for w in writes if table.name in w.parts
                for r in w.read.children.get(table.name, {}).get(w.uuid, ())]
        if rows:
            conn.execute(sa.insert(table), rows)
    for w in writes:
        if 'security_groups' not in w.parts:
            continue
        for assoc, group in w.read.security_groups.get(w.uuid, ()):
            # Security group ids collide across cells too; each instance
            # gets its own copy of the groups it is in.
            result = conn.execute(sa.insert(source.SECURITY_GROUPS),
                                  _without_id(group))
            values = _without_id(assoc)
            values['security_group_id'] = result.inserted_primary_key[0]
            conn.execute(sa.insert(source.SG_ASSOCIATIONS), values)


def _book_values(w):
    row = w.read.instances[w.uuid]
    return {'source_id': row['id'], 'source_updated_at': row['updated_at'],
            'read_at': w.read.read_at, 'deleted_at': row['deleted_at'],
            'digest': w.digest, 'checked_at': None, 'ticket': w.read.ticket}


def _replace(conn, writes, remove):
    """Write every row of ``writes``; drop every row of ``remove``."""
    uuids = [w.uuid for w in writes] + list(remove)
    if not uuids:
        return
    delete_rows(conn, uuids)
    _insert(conn, writes)
    if writes:
        conn.execute(sa.insert(schema.INSTANCES), [
            dict(_book_values(w), uuid=w.uuid, cell_uuid=w.read.cell_uuid)
            for w in writes])


def _patch(conn, writes):
    """Write the changed parts of instances the index holds from the cell.

    Their related rows are replaced; their instance rows and book entries
    are updated in place, with only the columns that changed: SQLite and
    MySQL then write only the database indexes on those columns, where a
    deleted and inserted row writes every one.
    """
    if not writes:
        return
    _delete(conn, {part: [w.uuid for w in writes if part in w.parts]
                   for part in PARTS if part != 'instances'})
    _insert(conn, [w._replace(parts=tuple(p for p in w.parts
                                          if p != 'instances'))
                   for w in writes])
    _update_instances(conn, [w for w in writes if 'instances' in w.parts])
    conn.execute(sa.update(schema.INSTANCES).where(
        schema.INSTANCES.c.uuid == sa.bindparam('b_uuid')),
        [dict(_book_values(w), b_uuid=w.uuid) for w in writes])


#: Columns SQLAlchemy sets itself in an UPDATE that does not (Nova's
#: ``updated_at``): always given, so that they keep the cell's value.
_SET_ALWAYS = frozenset(c.name for c in source.INSTANCES.c
                        if c.onupdate is not None)


def _update_instances(conn, writes):
    if not writes:
        return
    table = source.INSTANCES
    # A locking read sees the latest committed rows, whatever snapshot
    # the transaction's first read took (MySQL's repeatable read).
    # Plain dicts: the columns of each row are compared one by one, and a
    # row mapping's lookups cost several times a dict's.
    held = {row.uuid: dict(row._mapping) for row in conn.execute(
        sa.select(table).where(table.c.uuid.in_([w.uuid for w in writes]))
        .with_for_update())}
    by_columns, lost = collections.defaultdict(list), []
    for w in writes:
        new = _instance(w.read.instances[w.uuid], w.read.cell_id)
        old = held.get(w.uuid)
        if old is None:
            lost.append(w)
            continue
        changed = {k: v for k, v in new.items()
                   if k in _SET_ALWAYS or k not in old or old[k] != v}
        if changed:
            by_columns[tuple(sorted(changed))].append(
                dict(changed, b_uuid=w.uuid))
    for _columns, rows in sorted(by_columns.items()):
        conn.execute(sa.update(table).where(
            table.c.uuid == sa.bindparam('b_uuid')), rows)
    if lost:
        conn.execute(sa.insert(table), [
            _instance(w.read.instances[w.uuid], w.read.cell_id)
            for w in lost])


def _touch(conn, reads):
    """Record when rows that the index holds already were read again.

    :param reads: ``[(read, uuid)]``; each read's ticket is at least the
        book's (else it would be stale).
    """
    if not reads:
        return
    # No list reads checked_at or ticket (a document's version is
    # read_at): a check changes no page.
    with generation.unlisted(conn):
        conn.execute(sa.update(schema.INSTANCES).where(
            schema.INSTANCES.c.uuid == sa.bindparam('touched')).values(
            checked_at=sa.bindparam('at'), ticket=sa.bindparam('t')),
            [{'touched': uuid, 'at': read.read_at, 't': read.ticket}
             for read, uuid in reads])


def apply(engine, read, uuids, rewrite=False):
    """Make the index hold what ``read`` found for ``uuids``.

    ``uuids`` are the instances that were asked of the cell; those the cell
    no longer has leave the index if the index had them from that cell.

    :returns: an :class:`Outcome` of uuid lists.
    """
    return apply_reads(engine, [(read, uuids)], rewrite=rewrite)


def apply_reads(engine, reads, rewrite=False):
    """:func:`apply` for several cells' reads, in one transaction.

    :param reads: ``[(read, uuids)]``, the uuids asked of each read's cell.
    :param rewrite: write every row read, whatever the book's digests say:
        for a repair (``verify``), where the index's rows were found to
        differ from their cell's.
    :returns: an :class:`Outcome` of uuid lists, over every read.
    """
    # Run again if it loses a race: a deadlock between writers that lock
    # the book, or two that both found an instance new.
    return db.write(engine, functools.partial(_apply_reads, reads, rewrite))


def _apply_reads(reads, rewrite, conn):
    out = Outcome([], [], [], [], [], [])
    book = _book(conn, [u for _read, uuids in reads for u in uuids])
    replace, patch, remove, same = [], [], [], []
    for read, uuids in reads:
        for uuid in uuids:
            if uuid in read.refused:
                # Neither written nor gone: the index keeps what it held.
                out.refused.append(uuid)
                continue
            row, held = read.instances.get(uuid), book.get(uuid)
            if row is None:
                if held is not None and held.cell_uuid == read.cell_uuid:
                    remove.append(uuid)
                else:
                    out.missing.append(uuid)
                continue
            if held is not None and held.cell_uuid != read.cell_uuid:
                if row['hidden']:
                    # A cross-cell move leaves a hidden copy behind;
                    # the visible copy in the other cell is the
                    # instance.
                    out.hidden.append(uuid)
                    continue
                # Its index id is of its cell: every row is written.
                held = None
            elif held is not None and _is_stale(held, read):
                out.stale.append(uuid)
                continue
            write = Write(read, uuid, PARTS, digest(read, uuid))
            parts = (PARTS if rewrite or held is None
                     else _changed(held, write.digest))
            if not parts:
                same.append((read, uuid))
            elif parts == PARTS:
                replace.append(write)
            else:
                patch.append(write._replace(parts=parts))
    # Every row written below is of these instances (or of ``same``, whose
    # re-check changes nothing listed).
    generation.touched(conn, [w.uuid for w in replace + patch] + remove)
    _replace(conn, replace, remove)
    _patch(conn, patch)
    _touch(conn, same)
    out.removed.extend(remove)
    out.written.extend(w.uuid for w in replace + patch)
    out.written.extend(uuid for _read, uuid in same)
    return out
