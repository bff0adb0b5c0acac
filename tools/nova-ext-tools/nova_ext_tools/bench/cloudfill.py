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
"""``nova-ext-bench cloud``: the real cloud filled to a size.

First ``booted`` servers per cell are booted as users boot them, many per
request (``min_count``), by the admin and the members of both projects in
turn, with no network (``networks: none``: the computes are fake, and OVN
would take longer to make the ports than Nova the servers), scheduled by
Nova; the computes' allocation ratios are raised in placement first, as
an operator does, so that the fake computes take them all. Booting stops
there because Nova 34's compute reads every allocation of its node from
placement, one request per server, at each claim: the n-th boot on a
host costs n requests, and a thousand per compute would take hours.

The rest are clones of a booted server's rows in its cell's database and
in the API database (``bench.data``: what the list benchmark does in the
harness), owned by the three projects in turn, each with a uuid, name and
timestamps of its own; then ``nova-ext-manage index verify --fix`` brings
them into the index, as an operator brings in servers made while nova_ext
was not watching. Both nova-apis read the same rows. A filled cloud is
filled no further: ``fill`` counts what is there.

Then every ``PORT_EVERY``-th server of the admin's first page gets a port
in Neutron (:func:`give_ports`), on its project's network, so that Nova's
detailed view shows security groups for them, read from Neutron in each
of the page's requests, as in a cloud whose servers all have ports.
"""

import itertools
import subprocess
import time

from nova.compute import power_state
import sqlalchemy as sa

from nova_ext_tools.bench import data
from nova_ext_tools.cloud import layout
from nova_ext_tools.cloud import services

FLAVOR = 'bench'
#: Servers per create request, and how many may be building at once.
BATCH, IN_FLIGHT = 50, 150
#: The allocation ratios that fit a few thousand bench servers on a fake
#: compute (8 VCPU, 8000 MB, 500 GB): the cloud's ``huge`` flavor still
#: fits nowhere.
RATIOS = {'VCPU': 1000.0, 'MEMORY_MB': 10.0, 'DISK_GB': 100.0}
OWNERS = ('admin', 'member1', 'member2')
#: Of the admin's first page, the servers given a port: one in this many;
#: every other of those is in a second group of its project, GROUP.
PORT_EVERY, GROUP = 4, 'bench-web'
#: Ports per request of Neutron's bulk create.
PORT_BATCH = 50
PLACEMENT_VERSION = '1.26'


def _raise_ratios(admin):
    placement = admin.placement
    providers = placement.get(
        '/resource_providers', microversion=PLACEMENT_VERSION).json()
    for rp in providers['resource_providers']:
        url = '/resource_providers/%s/inventories' % rp['uuid']
        inv = placement.get(url, microversion=PLACEMENT_VERSION).json()
        wanted = dict(inv['inventories'])
        if all(wanted.get(rc, {}).get('allocation_ratio') == ratio
               for rc, ratio in RATIOS.items() if rc in wanted):
            continue
        for rc, ratio in RATIOS.items():
            if rc in wanted:
                wanted[rc] = dict(wanted[rc], allocation_ratio=ratio)
        r = placement.put(url, json={
            'resource_provider_generation':
                inv['resource_provider_generation'],
            'inventories': wanted}, microversion=PLACEMENT_VERSION)
        if r.status_code != 200:
            raise RuntimeError('placement refused the ratios of %s: %s'
                               % (rp['name'], r.text))


def _flavor(admin):
    for flavor in admin.compute.flavors():
        if flavor.name == FLAVOR:
            return flavor.id
    return admin.compute.create_flavor(name=FLAVOR, ram=1, vcpus=1,
                                       disk=1).id


def count(admin):
    """``{host: servers}`` and the number building, through nova-api."""
    hosts, building = {}, 0
    marker = None
    while True:
        url = ('/servers/detail?all_tenants=1&limit=1000'
               + ('&marker=%s' % marker if marker else ''))
        page = admin.compute.get(url, microversion='2.1').json()['servers']
        for server in page:
            host = server.get('OS-EXT-SRV-ATTR:host')
            hosts[host] = hosts.get(host, 0) + 1
            if server['status'] == 'BUILD':
                building += 1
        if len(page) < 1000:
            return hosts, building
        marker = page[-1]['id']


def fill(conns, cloud, per_cell, booted, image, progress=print):
    """Each cell's compute with ``per_cell`` servers, ``booted`` booted.

    :param conns: ``{user: connection to nova_ext's nova-api}``.
    :returns: what it found and made.
    """
    out = boot(conns, cloud.lay, min(booted, per_cell), image, progress)
    out['cloned'] = clone(conns, cloud, per_cell, progress)
    out['ports'] = give_ports(conns['admin'], progress)
    hosts, _ = count(conns['admin'])
    out['per_compute'] = {cloud.lay.compute_host(c): hosts.get(
        cloud.lay.compute_host(c), 0) for c in layout.CELLS}
    return out


def boot(conns, lay, per_cell, image, progress=print):
    """Boot servers until each cell's compute has ``per_cell``."""
    admin = conns['admin']
    _raise_ratios(admin)
    flavor = _flavor(admin)
    computes = [lay.compute_host(cell) for cell in layout.CELLS]
    started = time.monotonic()
    created = errors = 0
    owners = itertools.cycle(OWNERS)
    while True:
        hosts, building = count(admin)
        short = {h: per_cell - hosts.get(h, 0) for h in computes
                 if hosts.get(h, 0) < per_cell}
        if not short and not building:
            break
        progress('servers per compute %s, %d building' % (
            {h: hosts.get(h, 0) for h in computes}, building))
        if building > IN_FLIGHT or sum(short.values()) <= building:
            time.sleep(3)
            continue
        n = min(BATCH, sum(short.values()) - building)
        owner = next(owners)
        server = {'name': 'bench', 'flavorRef': flavor, 'imageRef': image,
                  'networks': 'none', 'min_count': n, 'max_count': n}
        if len(short) == 1 and len(computes) > 1:
            # Scheduling spreads the servers; the last ones go where they
            # are still short.
            owner = 'admin'
            server['availability_zone'] = 'nova:%s' % next(iter(short))
        r = conns[owner].compute.post('/servers', json={'server': server},
                                      microversion='2.37')
        if r.status_code != 202:
            errors += 1
            if errors > 5:
                raise RuntimeError('nova-api refused the servers: %s %s'
                                   % (r.status_code, r.text))
            time.sleep(5)
            continue
        created += n
    hosts, _ = count(admin)
    return {'unplaced': sum(v for h, v in hosts.items()
                            if h not in computes),
            'errored': _errored(admin), 'booted': created,
            'boot_seconds': round(time.monotonic() - started, 1)}


def _errored(admin):
    r = admin.compute.get('/servers?all_tenants=1&status=ERROR&limit=1000',
                          microversion='2.1')
    return len(r.json()['servers'])


#: Clones' names: apart from booted servers', which the writes act on.
CLONE_PREFIX = 'clone'


def clone(conns, cloud, per_cell, progress=print):
    """Clone a booted server of each cell until it holds ``per_cell``."""
    lay = cloud.lay
    started = time.monotonic()
    projects = [conns[u].current_project_id for u in OWNERS]
    api = sa.create_engine(lay.db_url('nova_api'))
    with api.connect() as conn:
        cells = {row.name: row for row in conn.execute(sa.text(
            'SELECT id, uuid, name FROM cell_mappings'))}
    made = 0
    for name in layout.CELLS:
        cell = cells[name]
        engine = sa.create_engine(cloud.nova.cell_db_url(name))
        try:
            made += _clone_cell(engine, api, cell, per_cell, projects,
                                progress)
        finally:
            engine.dispose()
    api.dispose()
    if made:
        progress('bringing %d clones into the index' % made)
        subprocess.run([services.venv_bin('nova-ext-manage'),
                        '--config-file', cloud.nova.conf, 'index', 'verify',
                        '--fix'], check=False, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return {'clones': made, 'seconds': round(time.monotonic() - started, 1)}


def _clone_cell(engine, api, cell, per_cell, projects, progress):
    instances = data.INSTANCES
    with engine.connect() as conn:
        live = conn.execute(sa.select(sa.func.count()).select_from(
            instances).where(instances.c.deleted == 0)).scalar()
        template = conn.execute(sa.select(instances.c.uuid).where(
            instances.c.deleted == 0, instances.c.vm_state == 'active',
            ~instances.c.display_name.like(CLONE_PREFIX + '%')).limit(
            1)).scalar()
        first = conn.execute(sa.select(sa.func.count()).select_from(
            instances).where(instances.c.display_name.like(
                CLONE_PREFIX + '%'))).scalar()
    wanted = per_cell - live
    if wanted <= 0 or template is None:
        return 0
    progress('cloning %d servers in %s' % (wanted, cell.name))
    rows = data.template_rows(engine, api, template)
    node = rows[instances][0]
    node = {'host': node['host'], 'hypervisor_hostname': node['node'],
            'id': node['compute_id']}
    for start in range(0, wanted, 500):
        clones = []
        for i in range(first + start, first + min(wanted, start + 500)):
            clone = data.clone_rows(
                rows, i, cell, node, projects[i % len(projects)],
                label='%s-%s-%05d' % (CLONE_PREFIX, cell.name, i))
            # The fake driver has no such server: Nova's power state sync
            # would write each clone's state as NOSTATE on its first pass,
            # 2 x 900 writes in the middle of a measurement.
            for row in clone[instances]:
                row['power_state'] = power_state.NOSTATE
            clones.append(clone)
        data.insert_rows(engine, api, clones)
    return wanted


def give_ports(admin, progress=print):
    """Ports for one in PORT_EVERY servers of the admin's first page.

    Made by the admin in each server's project, on that project's network,
    with the server's id as device id and no device owner: Nova's view
    finds them by device id, and Neutron tells Nova nothing of a port
    owned by no compute (``notify_nova_on_port_data_changes``), so the
    servers' rows do not change. Servers that have a port get none.

    :returns: ``{'ported': servers with a port, 'made': ports made}``.
    """
    page = admin.compute.get('/servers/detail?all_tenants=1&limit=1000',
                             microversion='2.1').json()['servers']
    chosen = page[::PORT_EVERY]
    ported = {p['device_id'] for p in admin.network.get(
        '/ports?fields=device_id').json()['ports']}
    networks = {n['project_id']: n['id'] for n in admin.network.get(
        '/networks?fields=id&fields=project_id&fields=name').json()[
        'networks'] if n['name'].startswith('private-')}
    groups = {}
    todo = []
    for n, server in enumerate(chosen):
        if server['id'] in ported:
            continue
        project = server['tenant_id']
        port = {'network_id': networks[project], 'project_id': project,
                'device_id': server['id'], 'name': 'bench-%d' % n}
        if n % 2:
            if project not in groups:
                groups[project] = _groups(admin, project)
            # Without the project's default group, Neutron makes it and
            # puts the port in it alone.
            if groups[project]:
                port['security_groups'] = groups[project]
        todo.append(port)
    for start in range(0, len(todo), PORT_BATCH):
        batch = todo[start:start + PORT_BATCH]
        r = admin.network.post('/ports', json={'ports': batch})
        if r.status_code != 201:
            raise RuntimeError('neutron refused ports: %s' % r.text)
        progress('  %d of %d ports made' % (start + len(batch), len(todo)))
    return {'ported': len(chosen), 'made': len(todo)}


def _groups(admin, project):
    """The ids of ``project``'s default group and GROUP (made if missing).

    None when the project has no default group yet.
    """
    def find(name):
        return admin.network.get(
            '/security-groups?name=%s&project_id=%s&fields=id'
            % (name, project)).json()['security_groups']
    default = find('default')
    if not default:
        return None
    found = find(GROUP)
    if found:
        return [default[0]['id'], found[0]['id']]
    r = admin.network.post('/security-groups', json={'security_group': {
        'name': GROUP, 'project_id': project}})
    if r.status_code != 201:
        raise RuntimeError('neutron refused a group: %s' % r.text)
    return [default[0]['id'], r.json()['security_group']['id']]
