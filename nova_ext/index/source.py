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
``changes-since`` queries exactly as the cells do.
"""

import hashlib
import time

from nova.db.main import api as main_db_api
from nova.db.main import models
import sqlalchemy as sa

INSTANCES = models.Instance.__table__
#: Child tables keyed by instance uuid, and the column holding it.
CHILDREN = (
    (models.InstanceExtra.__table__, 'instance_uuid'),
    (models.InstanceInfoCache.__table__, 'instance_uuid'),
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
        (``nova_ext.index.sequence``): the read saw the change of every
        mark whose number is at most its ticket.
    :ivar instances: ``{uuid: row mapping}``; uuids asked for but absent
        from the cell are not in it.
    :ivar children: ``{table name: {uuid: [row mappings]}}``.
    :ivar security_groups: ``{uuid: [(association row, group row)]}``.
    """

    def __init__(self, cell_mapping, read_at, ticket):
        self.cell_uuid = cell_mapping.uuid
        self.cell_id = cell_mapping.id
        self.read_at = read_at
        self.ticket = ticket
        self.instances = {}
        self.children = {}
        self.security_groups = {}


#: At most this many instances, a read first asks which related tables
#: hold rows of them (:func:`read_rows`): the probe binds the uuids once
#: per table, and stays under SQLite's oldest limit of 999 parameters.
PROBE_MAX = 100


def read(cctxt, cell_mapping, uuids, ticket):
    """Read the instances ``uuids`` and their related rows from one cell.

    :param cctxt: a context targeted at ``cell_mapping``.
    :param ticket: the index's sequence number, taken before this read
        (``nova_ext.index.sequence.ticket``).
    """
    uuids = list(uuids)
    result = CellRead(cell_mapping, time.time(), ticket)
    if not uuids:
        return result
    with main_db_api.get_context_manager(cctxt).reader.using(cctxt) as s:
        read_rows(s.execute, result, uuids)
    return result


def _related():
    return [(table, table.c[key]) for table, key in CHILDREN] + [
        (SG_ASSOCIATIONS, SG_ASSOCIATIONS.c.instance_uuid)]


def _holding(execute, related, uuids):
    """The names of the ``related`` tables that hold rows of ``uuids``.

    One query instead of one per table: most instances have no rows in
    most of them (tags, faults, PCI devices, security group associations
    where Neutron keeps the groups).
    """
    row = execute(sa.select(*[
        sa.exists().where(column.in_(uuids)).label('r%d' % n)
        for n, (_table, column) in enumerate(related)])).one()
    return {table.name for (table, _column), held in zip(related, row)
            if held}


def read_rows(execute, result, uuids):
    """Fill ``result`` (a :class:`CellRead`) with the rows of ``uuids``.

    :param execute: a Session's or a Connection's ``execute``, in one
        transaction.
    """
    for row in _rows_of(execute, sa.select(INSTANCES).where(
            INSTANCES.c.uuid.in_(uuids))):
        result.instances[row['uuid']] = row
    related = _related()
    if not result.instances:
        # The index holds nothing of instances gone from the cell.
        holding = set()
    elif len(uuids) <= PROBE_MAX:
        holding = _holding(execute, related, uuids)
    else:
        holding = {table.name for table, _column in related}
    for table, key in CHILDREN:
        by_uuid = result.children.setdefault(table.name, {})
        if table.name not in holding:
            continue
        for row in _rows_of(execute, sa.select(table).where(
                table.c[key].in_(uuids)).order_by(table.c.id
                                                  if 'id' in table.c
                                                  else table.c.tag)):
            by_uuid.setdefault(row[key], []).append(row)
    if SG_ASSOCIATIONS.name not in holding:
        return
    query = sa.select(SG_ASSOCIATIONS, SECURITY_GROUPS).join(
        SECURITY_GROUPS,
        SECURITY_GROUPS.c.id == SG_ASSOCIATIONS.c.security_group_id,
    ).where(SG_ASSOCIATIONS.c.instance_uuid.in_(uuids)).order_by(
        SG_ASSOCIATIONS.c.id)
    n = len(SG_ASSOCIATIONS.c)
    for row in execute(query):
        assoc, group = _sg_pair(row, n)
        result.security_groups.setdefault(
            assoc['instance_uuid'], []).append((assoc, group))


def _rows_of(execute, query):
    return [dict(row._mapping) for row in execute(query)]


def present(cctxt, cell_mapping, uuids):
    """The ``uuids`` whose instance row, deleted or not, is in the cell.

    :param cctxt: a context targeted at ``cell_mapping``.
    """
    with main_db_api.get_context_manager(cctxt).reader.using(cctxt) as s:
        return {row[0] for row in s.execute(sa.select(INSTANCES.c.uuid)
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
    columns = [c for c in INSTANCES.c if c.name not in ('id', 'deleted')]
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
