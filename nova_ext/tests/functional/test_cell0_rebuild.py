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
"""Rebuild from cell0 (spec 004) in Nova's multi-cell harness.

Computes start small (``fake.SmallFakeDriver``: 8 GiB of RAM), so a
16 GiB flavor fails scheduling and Nova buries the server in cell0;
"adding capacity" starts a large compute (``fake.FakeDriver``) in cell2.
Casts are real casts (the conductor builds asynchronously, as deployed).
"""

import argparse
import io
import json

from nova.compute import api as compute_api
from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects
from nova.tests.functional.api import client
from nova.tests.unit import fake_crypto
from oslo_upgradecheck import upgradecheck
import sqlalchemy as sa

from nova_ext.cell0_rebuild import build_captures
from nova_ext.cell0_rebuild import flow
from nova_ext.cell0_rebuild import migration
from nova_ext.cell0_rebuild import objects as ext_objects
from nova_ext.cmd import manage_db
from nova_ext.cmd import status as status_cmd
from nova_ext import conf as ext_conf
from nova_ext.seams import api as api_entry_point
from nova_ext.tests.functional import base
from nova_ext.tests.functional import fixtures as ext_fixtures
from nova_ext.tests.functional import population

NET = '3cb9bc59-5699-4588-a4b1-b87f96708bc6'     # NeutronFixture.network_1
IMAGE = '155d900f-4e14-4e4c-a73d-069cbf4541e6'   # GlanceFixture
OTHER_IMAGE = 'a2459075-d96c-40d5-893e-577ff92e721c'
BFV_VOLUME = '6ca404f3-d844-4169-bb96-bc792f37de98'  # image IMAGE inside
USER_DATA = 'IyEvYmluL3NoCmVjaG8gaGkK'
PORT = 'ce531f90-199f-48c0-816c-13e38010b442'   # NeutronFixture.port_1
CERTS = ['0b5d2c72-12cc-4ba6-a8d7-3ff5cc1d8cb8',
         '674736e3-f25c-405c-8362-bbf991e0ce0a']


class Cell0RebuildBase(base.NovaExtTestCase):
    CAST_AS_CALL = False
    NOVA_EXT_OPTIONS = {'nova_ext_cell0_rebuild': {'enabled': True}}

    def _setup_services(self):
        # As an operator would: nova-ext-manage api_db sync.
        migration.db_sync()
        super()._setup_services()

    def _setup_compute_service(self):
        self.flags(compute_driver='fake.SmallFakeDriver')
        return super()._setup_compute_service()

    def setUp(self):
        super().setUp()
        self.ctxt = nova_context.get_admin_context()
        self.big = self._create_flavor(memory_mb=16384, vcpu=1, disk=1,
                                       name='big')
        self.api.api_post('/os-keypairs', {'keypair': {
            'name': 'k1', 'public_key': fake_crypto.get_ssh_public_key()}})

    def _add_capacity(self):
        self.flags(compute_driver='fake.FakeDriver')
        self._start_compute('large', cell_name='cell2')

    def _body(self, **extra):
        body = {'name': 'big-one', 'imageRef': IMAGE,
                'flavorRef': self.big,
                'networks': [{'uuid': NET, 'tag': 'nic1'}],
                'key_name': 'k1', 'tags': ['red', 'blue'],
                'metadata': {'purpose': 'test'},
                'trusted_image_certificates': CERTS,
                'user_data': USER_DATA, 'config_drive': True,
                'hostname': 'big-host'}
        body.update(extra)
        return {k: v for k, v in body.items() if v is not None}

    def _bury(self, **extra):
        """A server that failed scheduling: ERROR, in cell0."""
        server = self.api.post_server({'server': self._body(**extra)})
        server = self._wait_for_state_change(server, 'ERROR')
        self.assertEqual(objects.CellMapping.CELL0_UUID,
                         self._mapping(server['id']).cell_mapping.uuid)
        self.assertIn('No valid host', server['fault']['message'])
        return server

    def _mapping(self, uuid):
        return objects.InstanceMapping.get_by_instance_uuid(self.ctxt, uuid)

    def _cell_record(self, uuid, cell_name='cell0', read_deleted='no'):
        cell = (objects.CellMapping.get_by_uuid(
            self.ctxt, objects.CellMapping.CELL0_UUID)
            if cell_name == 'cell0' else self.cell_mappings[cell_name])
        with nova_context.target_cell(self.ctxt, cell) as cctxt:
            cctxt.read_deleted = read_deleted
            try:
                return objects.Instance.get_by_uuid(cctxt, uuid)
            except nova_exception.InstanceNotFound:
                return None

    def _rebuild(self, server_id, api=None, image=IMAGE, **extra):
        body = {'rebuild': dict({'imageRef': image}, **extra)}
        return (api or self.api).api_post(
            '/servers/%s/action' % server_id, body).body['server']

    def _rebuild_fails(self, server_id, status, api=None, **extra):
        error = self.assertRaises(
            client.OpenStackApiException, self._rebuild, server_id,
            api=api, **extra)
        self.assertEqual(status, error.response.status_code,
                         error.response.text)
        return error.response.json()

    def _deleted_while_rebuilding(self):
        """The owner deletes a server being rebuilt: a 404 to the rebuild.

        The delete comes once the server is a build request; the rebuild
        is handed to the conductor, but the server is gone by the time
        Nova renders the answer.
        """
        server = self._bury()
        self._add_capacity()
        real = flow.hard_delete

        def _deleted_first(context, buried):
            self.api.delete_server(server['id'])
            real(context, buried)
        self.stub_out('nova_ext.cell0_rebuild.flow.hard_delete',
                      _deleted_first)
        self._rebuild_fails(server['id'], 404)
        self._wait_until_deleted(server)
        return server

    def _assert_still_buried(self, server_id, fault_start='No valid host'):
        server = self.api.get_server(server_id)
        self.assertEqual('ERROR', server['status'])
        self.assertTrue(server['fault']['message'].startswith(fault_start),
                        server['fault'])
        self.assertEqual(objects.CellMapping.CELL0_UUID,
                         self._mapping(server_id).cell_mapping.uuid)
        self.assertRaises(nova_exception.BuildRequestNotFound,
                          objects.BuildRequest.get_by_instance_uuid,
                          self.ctxt, server_id)
        return server


class TestCell0Rebuild(Cell0RebuildBase):

    def test_rebuild_keeps_uuid_networks_tags_keypair_certs(self):
        server = self._bury()
        capture = ext_objects.BuildCapture.get_by_instance_uuid(
            self.ctxt, server['id'])
        self.assertEqual([(NET, 'nic1')], [
            (r.network_id, r.tag) for r in capture.requested_networks])
        self._add_capacity()
        seen = self._watch_steps(server['id'])

        answer = self._rebuild(server['id'], name='renamed',
                               metadata={'purpose': 'rebuilt'})

        self.assertEqual(server['id'], answer['id'])
        self.assertIn(answer['status'], ('BUILD', 'REBUILD', 'ACTIVE'))
        self.assertIn('adminPass', answer)
        # Shown at every step, from cell0 until the mapping moves, then
        # from the build request (spec 003).
        self.assertEqual(['ERROR', 'BUILD', 'BUILD'],
                         [seen[s] for s in ('map_to', 'hard_delete',
                                            'cast')])
        active = self._wait_for_state_change(answer, 'ACTIVE')
        self.assertEqual('renamed', active['name'])
        self.assertEqual({'purpose': 'rebuilt'}, active['metadata'])
        self.assertEqual('k1', active['key_name'])
        self.assertEqual(['blue', 'red'], sorted(active['tags']))
        self.assertEqual(sorted(CERTS),
                         sorted(active['trusted_image_certificates']))
        self.assertEqual('large', active['OS-EXT-SRV-ATTR:host'])
        self.assertEqual(USER_DATA, active['OS-EXT-SRV-ATTR:user_data'])
        self.assertEqual('True', active['config_drive'])
        self.assertEqual('big-host', active['OS-EXT-SRV-ATTR:hostname'])
        # The requested network and its device tag came back.
        ports = self.neutron.list_ports(
            is_admin=True, device_id=server['id'])['ports']
        self.assertEqual([NET], [p['network_id'] for p in ports])
        with nova_context.target_cell(
                self.ctxt, self.cell_mappings['cell2']) as cctxt:
            vifs = objects.VirtualInterfaceList.get_by_instance_uuid(
                cctxt, server['id'])
        self.assertEqual(['nic1'], [v.tag for v in vifs])
        # Nothing left in cell0, not even soft-deleted rows.
        self.assertIsNone(self._cell_record(server['id'],
                                            read_deleted='yes'))
        # Built in a real cell: the purge forgets the capture.
        self.assertEqual((1, 1), build_captures.PurgeBuildCaptures()(
            self.ctxt, 50))
        self.assertIsNone(ext_objects.BuildCapture.get_by_instance_uuid(
            self.ctxt, server['id']))

    def _watch_steps(self, server_id):
        """GET the server before each state-changing step of the flow."""
        seen = {}
        for name in ('map_to', 'hard_delete', 'cast'):
            original = getattr(flow, name)

            def _step(*args, _name=name, _original=original, **kwargs):
                if _name not in seen:
                    seen[_name] = self.api.get_server(server_id)['status']

                return _original(*args, **kwargs)
            self.stub_out('nova_ext.cell0_rebuild.flow.%s' % name, _step)
        return seen

    def test_second_failure_buries_again_and_rebuilds_again(self):
        server = self._bury()
        self._rebuild(server['id'])
        self._wait_for_state_change(server, 'ERROR')
        self._assert_still_buried(server['id'])
        self._add_capacity()
        self._rebuild(server['id'])
        self._wait_for_state_change(server, 'ACTIVE')

    def test_boot_from_volume(self):
        server = self._bury(
            imageRef='', trusted_image_certificates=None,
            block_device_mapping_v2=[{
                'source_type': 'volume', 'destination_type': 'volume',
                'boot_index': 0, 'uuid': BFV_VOLUME}])
        self._add_capacity()
        # A volume-backed server keeps its volume's image.
        self._rebuild_fails(server['id'], 400, image=OTHER_IMAGE)
        self._rebuild(server['id'])
        self._wait_for_state_change(server, 'ACTIVE')
        attached = self.cinder.volume_ids_for_instance(server['id'])
        self.assertEqual([BFV_VOLUME], list(attached))
        with nova_context.target_cell(
                self.ctxt, self.cell_mappings['cell2']) as cctxt:
            bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(
                cctxt, server['id'])
        self.assertEqual([BFV_VOLUME], [b.volume_id for b in bdms
                                        if b.destination_type == 'volume'])

    def test_new_image_and_multi_create(self):
        answer = self.api.post_server({'server': self._body(
            min_count=2, max_count=2, return_reservation_id=True,
            hostname=None)})
        reservation = answer['reservation_id']
        servers = self.api.get_servers(
            search_opts={'reservation_id': reservation})
        self.assertEqual(2, len(servers))
        for server in servers:
            self._wait_for_state_change(server, 'ERROR')
            capture = ext_objects.BuildCapture.get_by_instance_uuid(
                self.ctxt, server['id'])
            self.assertEqual(reservation, capture.reservation_id)
        self._add_capacity()
        self._rebuild(servers[0]['id'], image=OTHER_IMAGE)
        active = self._wait_for_state_change(servers[0], 'ACTIVE')
        self.assertEqual(OTHER_IMAGE, active['image']['id'])
        self._assert_still_buried(servers[1]['id'])

    def test_port_and_no_network(self):
        by_port = self._bury(networks=[{'port': PORT}])
        no_net = self._bury(networks='none', tags=None)
        self._add_capacity()
        for server in (by_port, no_net):
            self._rebuild(server['id'])
            self._wait_for_state_change(server, 'ACTIVE')
        ports = self.neutron.list_ports(is_admin=True,
                                        device_id=by_port['id'])['ports']
        self.assertEqual([PORT], [p['id'] for p in ports])
        self.assertEqual([], self.neutron.list_ports(
            is_admin=True, device_id=no_net['id'])['ports'])

    def test_multi_create_without_reservation_id(self):
        # Nova answers with the first server only; the others are found
        # through its reservation.
        first = self.api.post_server({'server': self._body(
            min_count=3, networks='none', hostname=None)})
        captured = [ext_objects.BuildCapture.get_by_instance_uuid(
            self.ctxt, s['id']) for s in self.api.get_servers()]
        self.assertEqual(3, len(captured))
        self.assertEqual(1, len({c.reservation_id for c in captured}))
        self.assertIn(first['id'], [c.instance_uuid for c in captured])
        self.assertEqual(['none'] * 3, [
            c.requested_networks[0].network_id for c in captured])

    def test_delete_forgets_capture(self):
        server = self._bury()
        self._delete_server(server)
        self.assertIsNone(ext_objects.BuildCapture.get_by_instance_uuid(
            self.ctxt, server['id']))

    def test_delete_while_rebuilding(self):
        server = self._deleted_while_rebuilding()
        for cell in ('cell0', 'cell1', 'cell2'):
            self.assertIsNone(self._cell_record(server['id'], cell))
        self.assertEqual({}, self._get_allocations_by_server_uuid(
            server['id']))

    def test_deleted_before_mapping_moves(self):
        server = self._bury()
        real = flow.map_to

        def _deleted_first(context, buried, cell):
            if cell is None:
                self.api.delete_server(server['id'])
            real(context, buried, cell)
        self.stub_out('nova_ext.cell0_rebuild.flow.map_to', _deleted_first)
        self._rebuild_fails(server['id'], 404)
        self._wait_until_deleted(server)
        self.assertRaises(nova_exception.BuildRequestNotFound,
                          objects.BuildRequest.get_by_instance_uuid,
                          self.ctxt, server['id'])


class TestCell0RebuildRefusals(Cell0RebuildBase):

    def test_concurrent_rebuild_gets_409(self):
        server = self._bury()
        self._add_capacity()
        real = flow.map_to
        second = []

        def _second_rebuild_first(context, buried, cell):
            if cell is None and not second:
                # Another rebuild arrives while this one holds the build
                # request: the server still looks buried to it.
                second.append(self._rebuild_fails(server['id'], 409))
            real(context, buried, cell)
        self.stub_out('nova_ext.cell0_rebuild.flow.map_to',
                      _second_rebuild_first)
        self._rebuild(server['id'])
        self.assertIn('already being rebuilt',
                      second[0]['conflictingRequest']['message'])
        self._wait_for_state_change(server, 'ACTIVE')

    def test_other_project_gets_404(self):
        server = self._bury()
        other = population.other_project_api(self)
        self._rebuild_fails(server['id'], 404, api=other)
        self._assert_still_buried(server['id'])

    def test_older_microversion_keeps_409(self):
        server = self._bury()
        self._add_capacity()
        self.api.microversion = '2.99'
        body = self._rebuild_fails(server['id'], 409)
        self.assertIn('invalid state', body['conflictingRequest']['message'])
        self._assert_still_buried(server['id'])

    def test_disabled_keeps_409(self):
        server = self._bury()
        self.flags(enabled=False, group='nova_ext_cell0_rebuild')
        self._rebuild_fails(server['id'], 409)
        self._assert_still_buried(server['id'])

    def test_max_retries_keeps_409(self):
        def _max_retries(*args, **kwargs):
            raise nova_exception.MaxRetriesExceeded(reason='test')
        self.stub_out('nova.scheduler.manager.SchedulerManager.'
                      'select_destinations', _max_retries)
        server = self.api.post_server({'server': self._body()})
        server = self._wait_for_state_change(server, 'ERROR')
        self.assertIn('Exceeded maximum number of retries',
                      server['fault']['message'])
        body = self._rebuild_fails(server['id'], 409)
        self.assertIn('invalid state', body['conflictingRequest']['message'])

    def test_quota_exceeded_gives_403_and_changes_nothing(self):
        server = self._bury()
        self._add_capacity()
        self.admin_api.update_quota({'ram': 8192, 'force': True})
        body = self._rebuild_fails(server['id'], 403)
        self.assertIn('Quota exceeded', body['forbidden']['message'])
        self._assert_still_buried(server['id'])

    def test_personality_gives_400(self):
        self.api.microversion = '2.56'
        body = self._body(personality=[{'path': '/etc/motd',
                                        'contents': 'aGVsbG8='}])
        for key in ('tags', 'trusted_image_certificates', 'hostname'):
            body.pop(key)
        server = self.api.post_server({'server': body})
        self._wait_for_state_change(server, 'ERROR')
        self.api.microversion = 'latest'
        answer = self._rebuild_fails(server['id'], 400)
        self.assertIn('personality', answer['badRequest']['message'])
        self._assert_still_buried(server['id'])

    def test_created_while_disabled_gives_409(self):
        self.flags(enabled=False, group='nova_ext_cell0_rebuild')
        server = self._bury()
        self.flags(enabled=True, group='nova_ext_cell0_rebuild')
        body = self._rebuild_fails(server['id'], 409)
        self.assertIn('not recorded', body['conflictingRequest']['message'])

    def test_locked_by_admin(self):
        server = self._bury()
        self.admin_api.post_server_action(server['id'], {'lock': {}})
        self._rebuild_fails(server['id'], 409)
        self._assert_still_buried(server['id'])


class TestCell0RebuildInterrupted(Cell0RebuildBase):
    """A failure at any step leaves the server as it was, rebuildable."""

    def _interrupted_at(self, step):
        server = self._bury()
        self._add_capacity()
        real = getattr(flow, step)
        calls = []

        def _fails_once(*args, **kwargs):
            if not calls:
                calls.append(args)
                raise RuntimeError('injected failure in %s' % step)
            return real(*args, **kwargs)
        self.stub_out('nova_ext.cell0_rebuild.flow.%s' % step, _fails_once)
        self._rebuild_fails(server['id'], 409)
        self.assertEqual(1, len(calls))
        before = self._assert_still_buried(server['id'])
        self.assertEqual(
            {k: server['fault'][k] for k in ('code', 'message', 'created')},
            {k: before['fault'][k] for k in ('code', 'message', 'created')})
        self.assertEqual(['blue', 'red'], sorted(before['tags']))
        self._rebuild(server['id'])
        self._wait_for_state_change(server, 'ACTIVE')

    def test_at_build_request(self):
        self._interrupted_at('create_build_request')

    def test_at_mapping(self):
        self._interrupted_at('map_to')

    def test_at_hard_delete(self):
        self._interrupted_at('hard_delete')

    def test_at_cast(self):
        self._interrupted_at('cast')


class TestStockNova(Cell0RebuildBase):
    """What nova_ext changes: stock Nova answers 409 to the same rebuild."""

    NOVA_EXT_OPTIONS = {}

    def test_stock_nova_409(self):
        server = self._bury()
        self._add_capacity()
        body = self._rebuild_fails(server['id'], 409)
        self.assertIn('invalid state', body['conflictingRequest']['message'])
        self.assertIsInstance(compute_api.API(), compute_api.API)


class TestOperations(Cell0RebuildBase):
    """nova-ext-manage api_db and nova-ext-status."""

    def _setup_services(self):
        # The operator has not run nova-ext-manage api_db sync yet.
        base.NovaExtTestCase._setup_services(self)

    def _check(self):
        checks = status_cmd.Checks(ext_conf.CONF, self.ctxt)
        return checks._check_cell0_rebuild()

    def test_sync_version_and_status(self):
        self.assertEqual(upgradecheck.Code.FAILURE, self._check().code)
        out = io.StringIO()
        args = argparse.Namespace(command='version')
        manage_db.run_api_db(self.ctxt, ext_conf.CONF, args, out=out)
        self.assertEqual('None (head %s)' % migration.head(),
                         out.getvalue().strip())
        args = argparse.Namespace(command='sync', revision='head')
        self.assertEqual(0, manage_db.run_api_db(self.ctxt, ext_conf.CONF,
                                                 args, out=out))
        self.assertEqual(migration.head(), migration.current())
        out = io.StringIO()
        args = argparse.Namespace(command='version', format='json')
        manage_db.run_api_db(self.ctxt, ext_conf.CONF, args, out=out)
        self.assertEqual({'revision': migration.head(),
                          'head': migration.head()},
                         json.loads(out.getvalue()))
        self.assertEqual(upgradecheck.Code.WARNING, self._check().code)
        self.flags(migrations=['build-capture-purge'],
                   group='nova_ext_object_migrations')
        self.assertEqual(upgradecheck.Code.SUCCESS, self._check().code)
        # Nova's own API database migrations do not see nova_ext's.
        self.assertNotEqual(migration.VERSION_TABLE, 'alembic_version')


class TestCell0RebuildWithIndex(Cell0RebuildBase):
    """The instance index follows a server out of cell0 and back."""

    NOVA_EXT_OPTIONS = {
        'nova_ext_cell0_rebuild': {'enabled': True},
        'nova_ext_instance_list': {'driver': 'index'},
        'nova_ext_notifications': {'consumers': ['index']},
        'notifications': {'notification_format': 'versioned',
                          'notify_on_state_change': 'vm_and_task_state'},
    }

    def _setup_services(self):
        self.index = self.useFixture(ext_fixtures.IndexFixture(self))
        super()._setup_services()

    def _indexed(self):
        """Server ids and statuses the index serves, checked against Nova."""
        self.index.wait_fresh()
        with api_entry_point.stock_instance_list():
            stock = self.api.get_servers(detail=True)
        served = self.api.get_servers(detail=True)
        self.assertEqual(stock, served)
        with self.index.engine.connect() as conn:
            held = {u for (u,) in conn.execute(sa.text(
                'SELECT uuid FROM instances WHERE deleted = 0'))}
        return {s['id']: s['status'] for s in served}, held

    def test_index_follows_rebuild(self):
        server = self._bury()
        self.assertEqual(({server['id']: 'ERROR'}, {server['id']}),
                         self._indexed())
        self._add_capacity()
        self._rebuild(server['id'])
        self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual(({server['id']: 'ACTIVE'}, {server['id']}),
                         self._indexed())

    def test_deleted_while_rebuilding_leaves_the_index(self):
        self._deleted_while_rebuilding()
        # Nothing tells the index the row left cell0 but nova_ext's own
        # state change notification.
        self.assertEqual(({}, set()), self._indexed())
