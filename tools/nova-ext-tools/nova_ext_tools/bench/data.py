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
"""Servers for benchmarks, created fast and identically in every cloud.

Booting through the REST API costs about 1.5 s a server, too slow for
hundreds. So one server is booted through the API, on the first cell's
compute, and the others are clones of its database rows inserted directly
into the cell databases (the instance and its extra, info cache, system
metadata and block device mapping rows) and the API database (instance
mapping and RequestSpec). Each clone gets a ``compute_id`` for its node, an
explicit ``updated_at`` and a RequestSpec, without which Nova's latest
microversion fails its own response-schema validation.

Clones get uuids, names and timestamps derived from their index only, so
two clouds built with the same arguments hold the same servers; only the
booted template (``bench-0000``) differs, in its uuid and timestamps.
"""

import datetime
import hashlib
import time
import uuid

from nova import context as nova_context
from nova.db.api import api as api_db
from nova.db.api import models as api_models
from nova.db.main import api as main_db
from nova.db.main import models as main_models
from nova.notifications import base as notifications_base
from nova.notifications.objects import instance as instance_notification
from nova import objects
from oslo_serialization import jsonutils
import sqlalchemy as sa

NAMESPACE = uuid.UUID('5b0e7f0c-3d4a-4f51-9c1e-6e6f76612d65')
EPOCH = datetime.datetime(2025, 1, 1)

INSTANCES = main_models.Instance.__table__
# The other cell tables holding a server's own rows, by instance_uuid.
CELL_TABLES = tuple(model.__table__ for model in (
    main_models.InstanceExtra, main_models.InstanceInfoCache,
    main_models.InstanceSystemMetadata, main_models.BlockDeviceMapping))
MAPPINGS = api_models.InstanceMapping.__table__
SPECS = api_models.RequestSpec.__table__

# Fields of a listed server that differ between clouds for the template.
VOLATILE = ('id', 'links', 'created', 'updated', 'OS-SRV-USG:launched_at',
            'OS-EXT-SRV-ATTR:reservation_id')


def name(index):
    return 'bench-%04d' % index


def project_of(index, cells, projects):
    """The project owning server ``index``, out of ``projects``.

    Projects take turns within each cell (server ``i`` is the
    ``i // cells``-th of its cell), so every project has a share of every
    cell, whatever the number of cells.
    """
    return projects[(index // cells) % len(projects)]


def populate(cloud, servers, projects=None):
    """Give the cloud ``servers`` ACTIVE servers, round-robin over its cells.

    Server ``i`` goes to cell ``i % cells + 1`` and, within it, to its
    compute nodes in turn.

    :param projects: project ids the clones are shared out between (see
        :func:`project_of`); by default they all belong to the template's
        project, the harness's. The template keeps its project.
    :returns: a summary for the results.
    """
    ctxt = nova_context.get_admin_context()
    cells = [cloud.cell_mappings['cell%d' % n]
             for n in range(1, cloud.NUMBER_OF_CELLS + 1)]
    nodes = {cell.name: _nodes(ctxt, cell) for cell in cells}
    started = time.monotonic()
    template = cloud._create_server(
        name=name(0), host=nodes[cells[0].name][0]['host'],
        networks='none', api=cloud.admin_api, expected_state='ACTIVE')
    booted = time.monotonic() - started
    with nova_context.target_cell(ctxt, cells[0]) as cctxt:
        rows = template_rows(main_db.get_engine(context=cctxt),
                             api_db.get_engine(), template['id'])
    started = time.monotonic()
    per_cell = {cells[0].name: 1}
    per_project = {rows[INSTANCES][0]['project_id']: 1}
    for position, cell in enumerate(cells):
        indexes = [i for i in range(1, servers)
                   if i % len(cells) == position]
        cell_nodes = nodes[cell.name]
        clones = [clone_rows(rows, i, cell, cell_nodes[n % len(cell_nodes)],
                             project_of(i, len(cells), projects)
                             if projects else None)
                  for n, i in enumerate(indexes)]
        with nova_context.target_cell(ctxt, cell) as cctxt:
            insert_rows(main_db.get_engine(context=cctxt),
                        api_db.get_engine(), clones)
        per_cell[cell.name] = per_cell.get(cell.name, 0) + len(clones)
        for clone in clones:
            owner = clone[INSTANCES][0]['project_id']
            per_project[owner] = per_project.get(owner, 0) + 1
    return {'servers': servers, 'per_cell': per_cell,
            'per_project': per_project, 'template': template['id'],
            'template_boot_seconds': round(booted, 3),
            'clone_seconds': round(time.monotonic() - started, 3)}


def fingerprint(listed):
    """A digest of listed servers that is equal for equal data."""
    stable = sorted(({k: v for k, v in server.items() if k not in VOLATILE}
                     for server in listed), key=lambda s: s['name'])
    return hashlib.sha256(jsonutils.dump_as_bytes(
        stable, sort_keys=True)).hexdigest()[:16]


def update_payload(ctxt, instance_uuid):
    """An instance.update payload, as Nova's emit() hands it to rpc."""
    mapping = objects.InstanceMapping.get_by_instance_uuid(
        ctxt, instance_uuid)
    with nova_context.target_cell(ctxt, mapping.cell_mapping) as cctxt:
        instance = objects.Instance.get_by_uuid(
            cctxt, instance_uuid, expected_attrs=[
                'flavor', 'info_cache', 'metadata', 'system_metadata',
                'tags'])
        begin, end = notifications_base.audit_period_bounds(
            current_period=True)
        payload = instance_notification.InstanceUpdatePayload(
            context=cctxt, instance=instance,
            state_update=instance_notification.InstanceStateUpdatePayload(
                old_state=instance.vm_state, state=instance.vm_state,
                old_task_state=None, new_task_state=None),
            audit_period=instance_notification.AuditPeriodPayload(
                audit_period_beginning=begin, audit_period_ending=end),
            old_display_name=None)
    payload.obj_reset_changes(recursive=True)
    return payload.obj_to_primitive()


def _nodes(ctxt, cell):
    table = main_models.ComputeNode.__table__
    query = sa.select(table.c.id, table.c.host, table.c.hypervisor_hostname)
    with nova_context.target_cell(ctxt, cell) as cctxt:
        with main_db.get_engine(context=cctxt).connect() as conn:
            return [dict(row) for row in conn.execute(
                query.where(table.c.deleted == 0).order_by(table.c.id)
            ).mappings()]


def template_rows(cell_engine, api_engine, instance_uuid):
    """A server's rows, by table, in its cell and the API database."""
    rows = {}
    with cell_engine.connect() as conn:
        rows[INSTANCES] = _select(conn, INSTANCES, INSTANCES.c.uuid,
                                  instance_uuid)
        for table in CELL_TABLES:
            rows[table] = _select(conn, table, table.c.instance_uuid,
                                  instance_uuid)
    with api_engine.connect() as conn:
        for table in (MAPPINGS, SPECS):
            rows[table] = _select(conn, table, table.c.instance_uuid,
                                  instance_uuid)
    return rows


def _select(conn, table, column, value):
    return [dict(row) for row in
            conn.execute(sa.select(table).where(column == value)).mappings()]


def clone_rows(template, index, cell, node, project_id=None, label=None):
    """Rows of server ``index``, by table, copied from the template's.

    :param project_id: the clone's project; by default the template's.
    :param label: the clone's name, from which its uuid is made; by
        default ``name(index)``.
    """
    label = label or name(index)
    instance_uuid = str(uuid.uuid5(NAMESPACE, label))
    when = EPOCH + datetime.timedelta(seconds=index)
    owner = {'project_id': project_id} if project_id else {}

    def copy(row, **changes):
        row = dict(row, created_at=when,
                   updated_at=when if row.get('updated_at') else None)
        row.update(changes)
        row.pop('id', None)
        return row

    clone = {INSTANCES: [copy(
        row, uuid=instance_uuid, display_name=label,
        hostname=label, host=node['host'], launched_on=node['host'],
        node=node['hypervisor_hostname'], compute_id=node['id'],
        updated_at=when, launched_at=when,
        reservation_id='r-%s' % label, **owner)
        for row in template[INSTANCES]]}
    for table in CELL_TABLES:
        clone[table] = [copy(row, instance_uuid=instance_uuid)
                        for row in template[table]]
    bdms = clone[main_models.BlockDeviceMapping.__table__]
    for n, row in enumerate(bdms):
        row['uuid'] = str(uuid.uuid5(NAMESPACE, '%s-bdm%d' % (label, n)))
    clone[MAPPINGS] = [copy(row, instance_uuid=instance_uuid,
                            cell_id=cell.id, **owner)
                       for row in template[MAPPINGS]]
    clone[SPECS] = [copy(row, instance_uuid=instance_uuid,
                         spec=_respec(row['spec'], instance_uuid, project_id))
                    for row in template[SPECS]]
    return clone


def _respec(spec, instance_uuid, project_id=None):
    primitive = jsonutils.loads(spec)
    primitive['nova_object.data']['instance_uuid'] = instance_uuid
    if project_id:
        primitive['nova_object.data']['project_id'] = project_id
    return jsonutils.dumps(primitive)


def insert_rows(cell_engine, api_engine, clones):
    """Insert clones' rows: the cell's, then the API database's."""
    if not clones:
        return

    def insert(conn, tables):
        for table in tables:
            rows = [row for clone in clones for row in clone[table]]
            if rows:
                conn.execute(table.insert(), rows)

    with cell_engine.begin() as conn:
        insert(conn, (INSTANCES,) + CELL_TABLES)
    with api_engine.begin() as conn:
        insert(conn, (MAPPINGS, SPECS))
