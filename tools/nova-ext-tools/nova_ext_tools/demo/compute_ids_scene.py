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
"""Demo scene: compute object id linkage after an upgrade from before 2023.2.

The cloud is made to look upgraded from a release without the links: the
links are NULLed with SQL in every cell, next to rows that can never be
linked (an ERROR server that failed scheduling, in cell0, and a
shelved-offloaded one), a migration without ``dest_compute_id`` and a
renamed host. The audit, Nova's own ``populate_instance_compute_id`` and
``nova-ext-manage db online_data_migrations`` are run on that, and then
everything changed is put back and linked again.
"""

import contextlib
import io

from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova.db.main import models
from nova.objects import instance as instance_obj
from oslo_config import cfg
from oslo_utils import uuidutils
import sqlalchemy as sa

from nova_ext.cmd import compute_ids as audit_cmd
from nova_ext.cmd import manage
from nova_ext.cmd import manage_db
from nova_ext.compute_ids import migrations as compute_ids

CONF = cfg.CONF
INSTANCES = models.Instance.__table__
MIGRATIONS = models.Migration.__table__
NODES = models.ComputeNode.__table__
ALL = [linker.name for linker in compute_ids.ALL]
NOVA_ROUNDS = 3


@contextlib.contextmanager
def _conn(ctxt, cell):
    with nova_context.target_cell(ctxt, cell) as cctxt:
        manager = main_db_api.get_context_manager(cctxt)
        with manager.writer.using(cctxt) as session:
            yield session.connection()


def _links(ctxt, cell):
    """``{uuid: (host, compute_id)}`` of the live instances in a cell."""
    with _conn(ctxt, cell) as conn:
        return {r.uuid: (r.host, r.compute_id) for r in conn.execute(
            sa.select(INSTANCES.c.uuid, INSTANCES.c.host,
                      INSTANCES.c.compute_id)
            .where(INSTANCES.c.deleted == 0))}


def _node_links(ctxt, cell):
    with _conn(ctxt, cell) as conn:
        return {r.id: (r.host, r.service_id) for r in conn.execute(
            sa.select(NODES.c.id, NODES.c.host, NODES.c.service_id)
            .where(NODES.c.deleted == 0))}


def _manage(ctxt, module, *argv):
    args = manage.build_parser().parse_args(list(argv))
    out = io.StringIO()
    code = module.run(ctxt, CONF, args, out=out)
    return code, out.getvalue().splitlines()


def _linkable(ctxt, audit=None):
    audit = audit or audit_cmd.collect(ctxt)
    return sum(u['linkable'] for cell in audit.values()
               for u in cell['unlinked'].values())


def _show(report, command, lines):
    report.line('$ nova-ext-manage %s', command)
    for line in lines:
        report.line('  %s', line)


def _cell_of(host):
    return 'cell%s' % host[len('compute'):].split('-', 1)[0]


def _seed(cloud, ctxt, cells, renamed):
    """Pre-2023.2 records; returns what the scene must undo."""
    undo = {'servers': [], 'flavors': [], 'migrations': {}}
    hosts = sorted(cloud.computes)
    # An earlier scene may have stopped a compute (compute-status stops
    # one); a server sent there would never build.
    up = [h for h in hosts if cloud.compute_running(h)]
    small = cloud._create_flavor(memory_mb=512, vcpu=1, disk=1)
    huge = cloud._create_flavor(disk=10 ** 7)
    undo['flavors'] += [small, huge]
    # One linkable server per cell with a running compute, so that every
    # cell has work to do even when no earlier scene booted servers.
    for name in cells:
        target = [h for h in up if _cell_of(h) == name][:1]
        if target:
            undo['servers'].append(cloud._create_server(
                name='ids-%s' % name, host=target[0], flavor_id=small,
                networks='none', api=cloud.admin_api))
    # No host fits: scheduling fails and the server is buried in cell0.
    undo['servers'].append(cloud._create_server(
        name='ids-error', flavor_id=huge, networks='none',
        api=cloud.admin_api, expected_state='ERROR'))
    # Shelved and offloaded: host and node are NULL until it is unshelved.
    undo['shelved_cell'] = None
    if up:
        cloud.flags(shelved_offload_time=0)
        shelved = cloud._create_server(
            name='ids-shelved', host=up[0], flavor_id=small,
            networks='none', api=cloud.admin_api)
        cloud._shelve_server(shelved, 'SHELVED_OFFLOADED')
        undo['servers'].append(shelved)
        undo['shelved_cell'] = _cell_of(up[0])

    for name in cells:
        with _conn(ctxt, cloud.cell_mappings[name]) as conn:
            conn.execute(sa.update(INSTANCES).values(compute_id=None))
            conn.execute(sa.update(NODES).values(service_id=None))
            node = conn.execute(sa.select(NODES).where(
                NODES.c.deleted == 0).order_by(NODES.c.host)).first()
            instance = conn.execute(sa.select(INSTANCES.c.uuid).where(
                INSTANCES.c.deleted == 0,
                INSTANCES.c.host.is_not(None))).first()
            if node is None or instance is None:
                continue
            # A resize that finished before dest_compute_id existed.
            uuid = uuidutils.generate_uuid()
            conn.execute(sa.insert(MIGRATIONS).values(
                uuid=uuid, instance_uuid=instance.uuid,
                source_compute=node.host, dest_compute=node.host,
                source_node=node.hypervisor_hostname,
                dest_node=node.hypervisor_hostname,
                migration_type='resize', status='finished', deleted=0))
            undo['migrations'][name] = (uuid, node.host)
    # The first host of the last cell was renamed after its servers were
    # built: its compute node is renamed, its servers keep the old name.
    undo['renamed'] = [h for h in hosts if _cell_of(h) == renamed][0]
    with _conn(ctxt, cloud.cell_mappings[renamed]) as conn:
        conn.execute(sa.update(NODES).where(
            NODES.c.host == undo['renamed']).values(
                host=undo['renamed'] + '-renamed'))
    return undo


def _restore(cloud, ctxt, undo, renamed):
    with _conn(ctxt, cloud.cell_mappings[renamed]) as conn:
        conn.execute(sa.update(NODES).where(
            NODES.c.host == undo['renamed'] + '-renamed').values(
                host=undo['renamed']))
    for name, (uuid, _) in undo['migrations'].items():
        with _conn(ctxt, cloud.cell_mappings[name]) as conn:
            conn.execute(sa.delete(MIGRATIONS).where(
                MIGRATIONS.c.uuid == uuid))
    for server in undo['servers']:
        cloud._delete_server(server)
    for flavor in undo['flavors']:
        cloud.admin_api.api_delete('/flavors/%s' % flavor)


def compute_ids_scene(cloud, report, args):
    report.section('Compute object ids: linking records from before 2023.2')
    ctxt = nova_context.get_admin_context()
    before = list(CONF.nova_ext_object_migrations.migrations)
    cloud.flags(migrations=ALL, group='nova_ext_object_migrations')
    cells = sorted(name for name in cloud.cell_mappings if name != 'cell0')
    renamed = cells[-1]
    offload = CONF.shelved_offload_time

    def state():
        return {name: (_links(ctxt, cloud.cell_mappings[name]),
                       _node_links(ctxt, cloud.cell_mappings[name]))
                for name in cells}

    original = state()
    undo = _seed(cloud, ctxt, cells, renamed)
    try:
        _tour(cloud, report, ctxt, cells, renamed, undo,
              {name: links for name, (links, _) in original.items()})
    finally:
        _restore(cloud, ctxt, undo, renamed)
        code, lines = _manage(ctxt, manage_db, 'db', 'online_data_migrations')
        cloud.flags(migrations=before, group='nova_ext_object_migrations')
        cloud.flags(shelved_offload_time=offload)
    report.line('')
    report.line('Restored: host name put back, seeded servers, flavors and '
                'migrations removed, links made again.')
    report.check(code == 0 and state() == original,
                 'the cloud is back as it was: every server and compute '
                 'node linked as before')


def _tour(cloud, report, ctxt, cells, renamed, undo, original):
    renamed_host = undo['renamed']
    report.line('Seeded: compute_id NULL on every instance and service_id '
                'NULL on every compute node in %s; an ERROR server in cell0; '
                'a SHELVED_OFFLOADED server in %s; a finished resize with '
                'dest_compute_id NULL in %s; the node of %s renamed to %s-'
                'renamed.', ', '.join(cells), undo['shelved_cell'],
                ', '.join(sorted(undo['migrations'])), renamed_host,
                renamed_host)
    on_renamed = sum(1 for host, _ in _links(
        ctxt, cloud.cell_mappings[renamed]).values() if host == renamed_host)
    resized_renamed = sum(1 for _, host in undo['migrations'].values()
                          if host == renamed_host)
    report.line('')
    code, lines = _manage(ctxt, audit_cmd, 'compute-ids', 'audit')
    _show(report, 'compute-ids audit', lines)
    first = _linkable(ctxt)
    # With a single compute, renamed, nothing is linkable at all.
    report.check(code == (1 if first else 0),
                 'the audit exits %d: %d records are linkable'
                 % (code, first))

    report.line('')
    report.line("Side by side in cell0, batches of one, %d runs each: Nova's "
                'own populate_instance_compute_id (nova-manage runs it '
                "against one cell's database) and nova_ext's hook",
                NOVA_ROUNDS)
    hook = compute_ids.InstanceComputeId()
    with nova_context.target_cell(
            ctxt, cloud.cell_mappings['cell0']) as cctxt:
        nova = [instance_obj.populate_instance_compute_id(cctxt, 1)
                for _ in range(NOVA_ROUNDS)]
        ext = [hook(cctxt, 1) for _ in range(NOVA_ROUNDS)]
    report.table(['cell0'] + ['run %d found/done' % (n + 1)
                              for n in range(NOVA_ROUNDS)],
                 [['Nova'] + ['%d/%d' % r for r in nova],
                  ['nova_ext'] + ['%d/%d' % r for r in ext]])
    report.check(nova == [(1, 0)] * NOVA_ROUNDS,
                 "Nova: the ERROR server fills every batch; work found, "
                 'none done, forever')
    report.check(ext == [(0, 0)] * NOVA_ROUNDS,
                 'nova_ext: nothing linkable in cell0, so nothing found; '
                 'the run can finish')
    code, lines = _manage(ctxt, manage_db, 'db', 'online_data_migrations',
                          '--max-count', '1')
    _show(report, 'db online_data_migrations --max-count 1', lines)
    left = _linkable(ctxt)
    report.check(first - left <= len(cells) and
                 code == (1 if left else 0),
                 'nova_ext, --max-count 1: %d linked, at most one per cell; '
                 'exit %d, %d linkable left' % (first - left, code, left))

    report.line('')
    code, lines = _manage(ctxt, manage_db, 'db', 'online_data_migrations')
    _show(report, 'db online_data_migrations', lines)
    report.check(code == 0, 'nova_ext: run to completion, exit 0')
    report.line('')
    code, lines = _manage(ctxt, audit_cmd, 'compute-ids', 'audit')
    _show(report, 'compute-ids audit', lines)
    audit = audit_cmd.collect(ctxt)

    linked, untouched = True, True
    for name in cells:
        links = _links(ctxt, cloud.cell_mappings[name])
        for uuid, (host, was) in original[name].items():
            if host == renamed_host:
                untouched &= links[uuid][1] is None
            else:
                linked &= links[uuid][1] == was
        for node_id, (host, was) in _node_links(
                ctxt, cloud.cell_mappings[name]).items():
            if host.endswith('-renamed'):
                untouched &= was is None
            else:
                linked &= was is not None
    left = _linkable(ctxt, audit)
    report.check(linked and left == 0,
                 'every linkable instance, migration and compute node is '
                 'linked, to the same compute node as before')

    def reasons(cell, name='instance-compute-id'):
        return audit[cell]['unlinked'][name]['unlinkable']

    shelved = undo['shelved_cell']
    report.check(reasons('cell0').get(compute_ids.NO_KEY, 0) >= 1 and
                 (shelved is None or
                  reasons(shelved).get(compute_ids.NO_KEY, 0) >= 1),
                 'unlinkable servers reported: ERROR in cell0 and '
                 'SHELVED_OFFLOADED in %s, reason %s'
                 % (shelved, compute_ids.NO_KEY))
    report.check(
        untouched and
        reasons(renamed).get(compute_ids.RENAMED, 0) == on_renamed and
        reasons(renamed, 'migration-dest-compute-id').get(
            compute_ids.RENAMED, 0) == resized_renamed,
        'renamed host %s: its servers and resize reported as %s and left '
        'NULL, its compute node left without a service_id'
        % (renamed_host, compute_ids.RENAMED))
