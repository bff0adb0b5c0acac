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
"""Demo scene: a server that found no host is rebuilt from cell0.

Nova buries a server that failed scheduling in cell0, in ERROR, and
answers 409 to its rebuild however much capacity is added afterwards: the
way out is to delete it and create another, with another UUID. The scene
switches the capability on as an operator does (the option,
``nova-ext-manage api_db sync``, nova-api restarted), boots a server
larger than any host, adds a large compute and rebuilds the same server
into a real cell. It deletes what it made and switches the capability off
again at the end.
"""

import io

from nova.api.openstack import api_version_request
from nova import context as nova_context
from nova import objects
from nova.tests import fixtures as nova_fixtures
from nova.tests.unit import fake_crypto
from nova import utils
from nova.virt import fake
from oslo_config import cfg

from nova_ext.cell0_rebuild import objects as ext_objects
from nova_ext.cmd import manage
from nova_ext.cmd import manage_db

CONF = cfg.CONF
NET = nova_fixtures.NeutronFixture.network_1
IMAGE = nova_fixtures.GlanceFixture.image1['id']
LARGE = 'fake.FakeDriver'
KEY = 'demo-key'


def _api_db_sync():
    args = manage.build_parser().parse_args(['api_db', 'sync'])
    out = io.StringIO()
    code = manage_db.run_api_db(nova_context.get_admin_context(), CONF,
                                args, out=out)
    return code, out.getvalue().splitlines()


def _api_handlers(cloud):
    return [line.split('] ', 1)[-1]
            for line in cloud.stdlog.logger.output.splitlines()
            if 'nova_ext attached to nova-api' in line][-1]


def _cell(uuid):
    return objects.InstanceMapping.get_by_instance_uuid(
        nova_context.get_admin_context(), uuid).cell_mapping.name


def _rebuild(cloud, server, microversion):
    with utils.temporary_mutation(cloud.api, microversion=microversion):
        return cloud.api.api_post(
            '/servers/%s/action' % server['id'],
            {'rebuild': {'imageRef': IMAGE}}, check_response_status=[])


def _view(cloud, server):
    """``[id, status, cell, host, ports, tags, key, metadata]``."""
    uuid = server['id']
    server = cloud.api.get_server(uuid)
    host = cloud.admin_api.get_server(uuid)['OS-EXT-SRV-ATTR:host']
    ports = cloud.api.api_get('/servers/%s/os-interface' % uuid).body
    return [uuid, server['status'], _cell(uuid), host or '-',
            ', '.join('%s tag %s' % (NET['name'] if p['net_id'] == NET['id']
                                     else p['net_id'], p['tag'])
                      for p in ports['interfaceAttachments']) or '-',
            ','.join(sorted(server['tags'])), server['key_name'],
            server['metadata']]


def cell0_rebuild(cloud, report, args):
    report.section('Rebuild from cell0: a server that found no host')
    cloud.flags(enabled=True, group='nova_ext_cell0_rebuild')
    undo = []
    try:
        _scene(cloud, report, undo)
    finally:
        # The project's instance quota is shared with the later scenes.
        for step in reversed(undo):
            step()
        cloud.flags(enabled=False, group='nova_ext_cell0_rebuild')
    report.line('')
    report.line('Deleted the server, its flavor and key pair; the capability '
                'is off again (the added compute stays).')


def _scene(cloud, report, undo):
    report.line('[nova_ext_cell0_rebuild]enabled = True')
    code, lines = _api_db_sync()
    report.line('$ nova-ext-manage api_db sync')
    for line in lines:
        report.line('  %s', line)
    cloud.restart_api()
    report.line('nova-api restarted: %s', _api_handlers(cloud))
    report.check(code == 0 and 'cell0-rebuild' in _api_handlers(cloud),
                 'the cell0-rebuild handler is in nova-api')

    small = fake.SmallFakeDriver.memory_mb
    flavor = cloud._create_flavor(memory_mb=2 * small, vcpu=1, disk=1,
                                  name='demo-big')
    undo.append(lambda: cloud.admin_api.api_delete('/flavors/%s' % flavor))
    cloud.api.api_post('/os-keypairs', {'keypair': {
        'name': KEY, 'public_key': fake_crypto.get_ssh_public_key()}})
    undo.append(lambda: cloud.api.api_delete('/os-keypairs/%s' % KEY))
    server = cloud.api.post_server({'server': {
        'name': 'too-big', 'imageRef': IMAGE, 'flavorRef': flavor,
        'networks': [{'uuid': NET['id'], 'tag': 'nic1'}], 'key_name': KEY,
        'tags': ['demo', 'big'], 'metadata': {'purpose': 'demo'}}})
    undo.append(lambda: cloud._delete_server(server))
    server = cloud._wait_for_state_change(server, 'ERROR')
    report.line('')
    report.line('Booted %s: %d MB of RAM; every compute has %d MB '
                '(fake.SmallFakeDriver)', server['id'], 2 * small, small)
    headers = ['', 'id', 'status', 'cell', 'host', 'ports', 'tags', 'key',
               'metadata']
    before = _view(cloud, server)
    fault = server['fault']['message'].strip()
    report.check(before[1:3] == ['ERROR', 'cell0'] and
                 fault.startswith('No valid host'),
                 'ERROR, in cell0 (its instance mapping), fault: %s' % fault)
    captured = ext_objects.BuildCapture.get_by_instance_uuid(
        nova_context.get_admin_context(), server['id'])
    report.line('nova_ext recorded its requested networks, which Nova does '
                'not keep: %s', [(r.network_id, r.tag)
                                 for r in captured.requested_networks])

    # In cell1, which always keeps a running compute: later scenes boot a
    # server in each cell that has one, and must not find one more cell.
    cell = 'cell1'
    host = cloud.start_compute(cell, LARGE)
    report.line('')
    report.line('Capacity added: %s started in %s (%s)', host, cell, LARGE)
    newest = api_version_request.max_api_version()
    older = '%d.%d' % (newest.ver_major, newest.ver_minor - 1)
    stock = _rebuild(cloud, server, older)
    report.line('POST /servers/%s/action {"rebuild": ...} at %s: %d %s',
                server['id'], older, stock.status,
                stock.body.get('conflictingRequest', {}).get('message'))
    report.check(stock.status == 409 and _cell(server['id']) == 'cell0',
                 "below [nova_ext_cell0_rebuild]min_microversion (unset: "
                 "the newest, %s) stock Nova's 409, still in cell0"
                 % newest.get_string())

    answer = _rebuild(cloud, server, 'latest')
    report.line('POST /servers/%s/action {"rebuild": ...} at %s: %d',
                server['id'], newest.get_string(), answer.status)
    if not report.check(answer.status == 202, 'rebuild accepted: 202'):
        report.line('  %s', answer.body)
        return
    active = cloud._wait_for_state_change(server, 'ACTIVE')
    after = _view(cloud, server)
    report.table(headers, [['before'] + before, ['after'] + after])
    report.check(active['id'] == server['id'],
                 'the same server, UUID %s' % server['id'])
    report.check(after[1:4] == ['ACTIVE', cell, host],
                 'ACTIVE in %s on %s, no longer in cell0' % (cell, host))
    report.check(after[4:] == ['%s tag nic1' % NET['name']] + before[5:],
                 'its port is on the requested network with its NIC tag; '
                 'tags, key pair and metadata kept')
