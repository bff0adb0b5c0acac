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
"""Reading instance rows from a cell database.

Rows are read with SQLAlchemy Core from the tables of Nova's own models, as
they are, deleted rows included: the index must answer ``deleted=True`` and
``changes-since`` queries exactly as the cells do. The instances'
RequestSpecs, whose digest the index keeps (``writer.PARTS``), are read
from the API database for the reads of every cell at once
(:func:`add_specs`).
"""

import hashlib
import time

from nova.db.main import api as main_db_api
from nova.db.main import models
import sqlalchemy as sa

from nova_ext.seams.internals import request_specs as stored_specs

INSTANCES = models.Instance.__table__
INFO_CACHES = models.InstanceInfoCache.__table__
#: Child tables keyed by instance uuid, and the column holding it.
CHILDREN = (
    (models.InstanceExtra.__table__, 'instance_uuid'),
    (INFO_CACHES, 'instance_uuid'),
    (models.InstanceMetadata.__table__, 'instance_uuid'),
    (models.InstanceSystemMetadata.__table__, 'instance_uuid'),
    (models.InstanceFault.__table__, 'instance_uuid'),
    (models.PciDevice.__table__, 'instance_uuid'),
    (models.Tag.__table__, 'resource_id'),
    (models.BlockDeviceMapping.__table__, 'instance_uuid'),
)
SG_ASSOCIATIONS = models.SecurityGroupInstanceAssociation.__table__
SECURITY_GROUPS = models.SecurityGroup.__table__


def tables():
    """Every table of Nova's that the index mirrors."""
    return [INSTANCES, SG_ASSOCIATIONS, SECURITY_GROUPS] + [
        table for table, _key in CHILDREN]


class CellRead(object):
    """What one read of a cell returned for a set of instance uuids.

    :ivar cell_uuid: the cell read.
    :ivar cell_id: its cell mapping id.
    :ivar read_at: wall-clock time the read started: when the rows the
        index holds were read (the render cache's key), not their order.
    :ivar ticket: the index's sequence number taken before the read
        (``nova_ext.index.marks.sequence``): the read saw the change of every
        mark whose number is at most its ticket.
    :ivar instances: ``{uuid: row mapping}``; uuids asked for but absent
        from the cell are not in it.
    :ivar children: ``{table name: {uuid: [row mappings]}}``.
    :ivar security_groups: ``{uuid: [(association row, group row)]}``.
    :ivar request_specs: ``{uuid: stored spec}`` of the instances read that
        have one in the API database.
    :ivar refused: ``{uuid: why}`` of the instances whose row holds a value
        Nova's own query of the cell refuses (:func:`refusal`): not in
        ``instances``, and not to be taken as gone from the cell.
    """

    def __init__(self, cell_mapping, read_at, ticket):
        self.cell_uuid = cell_mapping.uuid
        self.cell_id = cell_mapping.id
        self.read_at = read_at
        self.ticket = ticket
        self.instances = {}
        self.children = {}
        self.security_groups = {}
        self.request_specs = {}
        self.refused = {}


def read(cctxt, cell_mapping, uuids, ticket):
    """Read the instances ``uuids``, their related rows and their specs.

    :param cctxt: a context targeted at ``cell_mapping``.
    :param ticket: as :func:`read_cell`.
    """
    result = read_cell(cctxt, cell_mapping, uuids, ticket)
    add_specs(cctxt, [result])
    return result


def read_cell(cctxt, cell_mapping, uuids, ticket):
    """Read the instances ``uuids`` and their related rows from one cell.

    Their request specs are in the API database: :func:`add_specs` reads
    them, for the reads of every cell at once.

    :param cctxt: a context targeted at ``cell_mapping``.
    :param ticket: the index's sequence number, taken before this read
        (``nova_ext.index.marks.sequence.take``); the specs too must be
        read after it was taken, so that they hold every change it covers.
    """
    uuids = list(uuids)
    result = CellRead(cell_mapping, time.time(), ticket)
    if not uuids:
        return result
    # A Core connection: an ORM Session costs as much again as the few
    # small statements of a read, and a catch-up reads every changed cell.
    with main_db_api.get_context_manager(
            cctxt).reader.connection.using(cctxt) as conn:
        read_rows(conn.execute, result, uuids)
    return result


def add_specs(context, reads):
    """Give each of ``reads`` the stored specs of its instances.

    One statement in the API database, whatever the number of cells.
    """
    found = specs_of(context, [uuid for result in reads
                               for uuid in result.instances])
    for result in reads:
        result.request_specs = {uuid: found[uuid] for uuid in result.instances
                                if uuid in found}


def specs_of(context, uuids):
    """``{uuid: stored spec}`` of those of ``uuids`` that have one."""
    uuids = list(uuids)
    if not uuids:
        return {}
    return dict(stored_specs.stored(context, uuids))


#: The related tables, each with the label of the column of a read's
#: instances statement that says whether it holds rows of the instance.
_RELATED = [(table, table.c[key], 'nova_ext_holds_%s' % table.name)
            for table, key in CHILDREN] + [
    (SG_ASSOCIATIONS, SG_ASSOCIATIONS.c.instance_uuid,
     'nova_ext_holds_%s' % SG_ASSOCIATIONS.name)]
_HELD = {table.name: label for table, _column, label in _RELATED}


def _uuids_in(column):
    return column.in_(sa.bindparam('uuids', expanding=True))


#: ``{column: its values}`` of the instance's enum columns.
_ENUMS = {column.name: frozenset(column.type.enums)
          for column in INSTANCES.c if isinstance(column.type, sa.Enum)}


def _as_stored(table):
    """The columns of ``table``, an enum's read as the cell stores it.

    Read through its type, a value outside the enum fails the whole
    statement: a ``locked_by`` that a hand edit stored (SQLite keeps any
    text; MySQL's and PostgreSQL's enums refuse it). Read as text, it
    fails that instance only (:func:`refusal`).
    """
    return [sa.type_coerce(column, sa.String).label(column.name)
            if column.name in _ENUMS else column for column in table.c]


def refusal(values):
    """Why Nova's query of the cell fails on this instance row, or None.

    Nova's queries that read the row fail on it: a list then takes the
    cell as down, a show of the instance is a 500. The index cannot hold
    it as Nova reads it: its change waits, and every list is Nova's, until
    the row is mended (``refresh``).
    """
    for name, allowed in _ENUMS.items():
        value = values.get(name)
        if value is not None and value not in allowed:
            return '%s %r is not one of %s' % (name, value, sorted(allowed))
    return None


def _statements():
    """The statements of a read, built once.

    Built anew for each read, a statement costs more than running it
    (coercions, its cache key), and a catch-up reads every changed cell.
    The instances' statement says, row by row, which related tables hold
    rows of the instance (one indexed lookup each): only those tables are
    read then, and only for those instances, where most instances have no
    rows in most of them (tags, faults, PCI devices, security group
    associations where Neutron keeps the groups).
    """
    held = [sa.exists().where(column == INSTANCES.c.uuid).label(label)
            for _table, column, label in _RELATED]
    instances = sa.select(*_as_stored(INSTANCES), *held).where(
        _uuids_in(INSTANCES.c.uuid))
    children = {
        table.name: sa.select(table).where(_uuids_in(table.c[key])).order_by(
            table.c.id if 'id' in table.c else table.c.tag)
        for table, key in CHILDREN}
    groups = sa.select(SG_ASSOCIATIONS, SECURITY_GROUPS).join(
        SECURITY_GROUPS,
        SECURITY_GROUPS.c.id == SG_ASSOCIATIONS.c.security_group_id,
    ).where(_uuids_in(SG_ASSOCIATIONS.c.instance_uuid)).order_by(
        SG_ASSOCIATIONS.c.id)
    return instances, children, groups


_INSTANCES, _CHILDREN, _GROUPS = _statements()


def read_rows(execute, result, uuids):
    """Fill ``result`` (a :class:`CellRead`) with the rows of ``uuids``.

    :param execute: a Session's or a Connection's ``execute``, in one
        transaction.
    """
    holding = {label: [] for label in _HELD.values()}
    for row in execute(_INSTANCES, {'uuids': list(uuids)}):
        values = dict(row._mapping)
        why = refusal(values)
        if why is not None:
            result.refused[values['uuid']] = why
            continue
        for label, held in holding.items():
            # Popped: the instance's row is the cell's, column for column.
            if values.pop(label):
                held.append(values['uuid'])
        result.instances[values['uuid']] = values
    for table, key in CHILDREN:
        by_uuid = result.children.setdefault(table.name, {})
        held = holding[_HELD[table.name]]
        if not held:
            continue
        for row in _rows_of(execute, _CHILDREN[table.name], held):
            by_uuid.setdefault(row[key], []).append(row)
    held = holding[_HELD[SG_ASSOCIATIONS.name]]
    if not held:
        return
    n = len(SG_ASSOCIATIONS.c)
    for row in execute(_GROUPS, {'uuids': held}):
        assoc, group = _sg_pair(row, n)
        result.security_groups.setdefault(
            assoc['instance_uuid'], []).append((assoc, group))


def _rows_of(execute, query, uuids):
    return [dict(row._mapping) for row in execute(query, {'uuids': uuids})]


def present(cctxt, cell_mapping, uuids):
    """The ``uuids`` whose instance row, deleted or not, is in the cell.

    :param cctxt: a context targeted at ``cell_mapping``.
    """
    with main_db_api.get_context_manager(
            cctxt).reader.connection.using(cctxt) as conn:
        return {row[0] for row in conn.execute(sa.select(INSTANCES.c.uuid)
                                               .where(INSTANCES.c.uuid.in_(
                                                   list(uuids))))}


def _sg_pair(row, n):
    # Both tables have the same column names; keep them apart by position.
    values = list(row)
    assoc_cols = [c.name for c in SG_ASSOCIATIONS.c]
    group_cols = [c.name for c in SECURITY_GROUPS.c]
    return (dict(zip(assoc_cols, values[:n])),
            dict(zip(group_cols, values[n:])))


def _since(query, since):
    if since is None:
        return query
    return query.where(sa.or_(INSTANCES.c.created_at >= since,
                              INSTANCES.c.updated_at >= since,
                              INSTANCES.c.deleted_at >= since))


def uuids_after(cctxt, after_id, limit, since=None):
    """Up to ``limit`` instances with ids past ``after_id``.

    In id order, deleted rows included, for resumable full syncs.

    :returns: ``(id, uuid, deleted, deleted_at)`` tuples.
    """
    with main_db_api.get_context_manager(cctxt).reader.using(cctxt) as s:
        query = sa.select(INSTANCES.c.id, INSTANCES.c.uuid,
                          INSTANCES.c.deleted, INSTANCES.c.deleted_at).where(
            INSTANCES.c.id > after_id)
        query = _since(query, since).order_by(INSTANCES.c.id).limit(limit)
        return [(row.id, row.uuid, row.deleted, row.deleted_at)
                for row in s.execute(query)]


def versions_after(cctxt, after_id, limit):
    """Up to ``limit`` ``{id, uuid, updated_at, deleted, deleted_at}``.

    In id order, past ``after_id``, deleted rows included.
    """
    with main_db_api.get_context_manager(cctxt).reader.using(cctxt) as s:
        query = sa.select(INSTANCES.c.id, INSTANCES.c.uuid,
                          INSTANCES.c.updated_at, INSTANCES.c.deleted,
                          INSTANCES.c.deleted_at).where(
            INSTANCES.c.id > after_id).order_by(INSTANCES.c.id).limit(limit)
        return [dict(row._mapping) for row in s.execute(query)]


def fingerprints(execute, uuids):
    """``{uuid: fingerprint}``: what verify compares between cell and index.

    A digest of the content of the instance row and of its rows in each
    related table: their timestamps do not tell two versions apart (tags
    have none, and two changes within a second carry the same stamp on
    MySQL, whose DATETIME has no fraction), and the index's own ids of
    the rows are not the cell's. ``execute`` is a Session's or a
    Connection's ``execute``; the cell and the index have the same tables.
    """
    uuids = list(uuids)
    prints = {}
    columns = [c for c in _as_stored(INSTANCES)
               if c.name not in ('id', 'deleted')]
    for row in execute(sa.select(INSTANCES.c.uuid, INSTANCES.c.deleted != 0,
                                 *columns).where(
            INSTANCES.c.uuid.in_(uuids))):
        prints[row[0]] = [bool(row[1]), _digest([tuple(row[2:])])]
    for table, key in CHILDREN:
        rows = {}
        for row in execute(sa.select(
                table.c[key], *[c for c in table.c if c.name != 'id'])
                .where(table.c[key].in_(uuids))):
            rows.setdefault(row[0], []).append(tuple(row[1:]))
        for uuid, fp in prints.items():
            fp.append(_digest(rows.get(uuid, ())))
    groups = {row[0]: row[1] for row in execute(
        sa.select(SG_ASSOCIATIONS.c.instance_uuid, sa.func.count())
        .where(SG_ASSOCIATIONS.c.instance_uuid.in_(uuids))
        .group_by(SG_ASSOCIATIONS.c.instance_uuid))}
    return {uuid: tuple(fp) + (groups.get(uuid, 0),)
            for uuid, fp in prints.items()}


def _digest(rows):
    """The same for the same rows in any order, on any backend."""
    return hashlib.blake2b(repr(sorted(map(repr, rows))).encode(),
                           digest_size=16).hexdigest()


def cell_fingerprints(cctxt, uuids):
    with main_db_api.get_context_manager(cctxt).reader.using(cctxt) as s:
        return fingerprints(s.execute, uuids)


def count(cctxt, since=None):
    with main_db_api.get_context_manager(cctxt).reader.using(cctxt) as s:
        query = _since(sa.select(sa.func.count()).select_from(INSTANCES),
                       since)
        return s.execute(query).scalar()
