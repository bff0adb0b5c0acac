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
"""IndexedInstance reads as the Instance Nova would build from the row."""

import copy

from nova import context as nova_context
from nova.db.main import models
from nova.network import model as network_model
from nova import objects
from nova.objects import instance as instance_obj
from nova.tests.unit import fake_instance
from nova import utils
from oslo_serialization import jsonutils

from nova_ext.index import ids
from nova_ext.instance_list import base as list_base
from nova_ext.instance_list.render import rows
from nova_ext.tests.unit import base

#: What Nova's server view reads of an Instance, besides methods.
READ = ('uuid', 'display_name', 'display_description', 'host', 'node',
        'hostname', 'project_id', 'user_id', 'vm_state', 'task_state',
        'power_state', 'progress', 'image_ref', 'key_name', 'config_drive',
        'locked_by', 'availability_zone', 'launch_index', 'kernel_id',
        'ramdisk_id', 'reservation_id', 'root_device_name', 'user_data',
        'created_at', 'updated_at', 'launched_at', 'terminated_at',
        'auto_disk_config', 'metadata', 'system_metadata', 'deleted', 'name')


#: What Nova's list of details joins and builds of an Instance.
ATTRS = ['metadata', 'system_metadata', 'flavor', 'info_cache',
         'trusted_certs']


class TestIndexedInstance(base.TestCase):

    def setUp(self):
        super().setUp()
        objects.register_all()
        self.ctx = nova_context.get_admin_context()
        flavor = objects.Flavor(
            id=7, flavorid='f1', name='m1.tiny', memory_mb=512, vcpus=1,
            root_gb=1, ephemeral_gb=0, swap=0, extra_specs={'a': 'b'},
            rxtx_factor=1.0, vcpu_weight=0, disabled=False, is_public=True,
            description=None)
        network = network_model.NetworkInfo([network_model.VIF(
            id='vif-1', address='aa:bb:cc:dd:ee:ff',
            network=network_model.Network(id='n1', label='private'))])
        self.row = fake_instance.fake_db_instance(
            id=5, host='h1', node='n1', hostname='srv', vm_state='active',
            access_ip_v4='10.0.0.1', access_ip_v6='2001:db8:0::1',
            metadata={'k': 'v'}, system_metadata={'image_os': 'x'},
            launch_index=0, progress=None, locked_by='admin',
            extra={'flavor': jsonutils.dumps({
                'cur': flavor.obj_to_primitive(), 'old': None,
                'new': None}),
                'trusted_certs': jsonutils.dumps(objects.TrustedCerts(
                    ids=['c1', 'c2']).obj_to_primitive())},
            info_cache=None)
        self.row['info_cache'] = {
            'instance_uuid': self.row['uuid'],
            'network_info': network.json(), 'created_at': None,
            'updated_at': None, 'deleted_at': None, 'deleted': False}

    def both(self):
        """(the Instance Nova builds, the IndexedInstance) of one row."""
        nova = objects.Instance._from_db_object(
            self.ctx, objects.Instance(), dict(self.row), ATTRS)
        return nova, self.indexed()

    def indexed(self):
        """The IndexedInstance of the row, as the index stores it."""
        indexed = dict(self.row, id=ids.index_id(5, 3))
        if self.row['deleted']:
            indexed['deleted'] = indexed['id']
        return rows.IndexedInstance(indexed)

    def assertReadsAlike(self, nova, indexed):
        for attr in READ:
            self.assertEqual(getattr(nova, attr), getattr(indexed, attr),
                             attr)
            self.assertEqual(nova.get(attr), indexed.get(attr), attr)
        for attr in ('access_ip_v4', 'access_ip_v6'):
            # The view renders these with str().
            self.assertEqual(str(nova[attr]), str(indexed[attr]), attr)
        self.assertEqual(nova.id, indexed.id)
        self.assertEqual(3, indexed.cell_id)
        self.assertEqual(nova.get_flavor().obj_to_primitive(),
                         indexed.get_flavor().obj_to_primitive())
        self.assertEqual(nova.get_network_info().json(),
                         indexed.get_network_info().json())
        self.assertEqual(nova.trusted_certs.ids, indexed.trusted_certs.ids)

    def test_reads_like_the_instance(self):
        self.assertReadsAlike(*self.both())

    def test_deleted_row(self):
        self.row['deleted'] = self.row['id']
        nova, indexed = self.both()
        self.assertTrue(indexed.deleted)
        self.assertReadsAlike(nova, indexed)

    def test_timestamps_render_alike(self):
        nova, indexed = self.both()
        for attr in ('created_at', 'updated_at'):
            # Nova's view renders them with isotime, aware or naive alike.
            self.assertEqual(utils.isotime(nova[attr]),
                             utils.isotime(indexed[attr]))

    def test_columns_are_coerced_when_read(self):
        nova, indexed = self.both()
        self.assertEqual({'created_at', 'updated_at', 'launched_at',
                          'terminated_at', 'deleted_at', 'access_ip_v4',
                          'access_ip_v6'}, set(indexed._raw))
        self.assertNotIn('created_at', vars(indexed))
        self.assertEqual(nova.created_at, indexed.created_at)
        self.assertIn('created_at', vars(indexed))
        self.assertIn('created_at', indexed)
        self.assertIn('updated_at', indexed)
        # A value set is the one read, not the row's.
        indexed.updated_at = None
        self.assertIsNone(indexed.updated_at)

    def test_copies_read_alike(self):
        nova, indexed = self.both()
        self.assertReadsAlike(nova, copy.copy(indexed))
        self.assertReadsAlike(nova, copy.deepcopy(indexed))
        self.assertReadsAlike(nova, indexed)

    def test_no_column_hides_a_method(self):
        # A row's values are the object's attributes, which take the place
        # of the class's methods of the same name (properties and slots
        # keep theirs).
        joined = {'info_cache', 'extra', 'fault', 'metadata',
                  'system_metadata', 'services', 'tags', 'security_groups',
                  'pci_devices'}
        columns = set(models.Instance.__table__.columns.keys())
        methods = {name for name, value in vars(rows.IndexedInstance).items()
                   if callable(value) and not name.startswith('__')}
        self.assertIn('get_flavor', methods)
        self.assertEqual(set(), (columns | joined) & methods)

    def test_a_column_not_read_is_absent(self):
        # A list without details reads a few columns (narrow.LISTED).
        indexed = rows.IndexedInstance(
            {'id': ids.index_id(5, 3), 'uuid': self.row['uuid'],
             'deleted': 0, 'display_name': 'srv', 'metadata': [],
             'system_metadata': []})
        self.assertNotIn('created_at', indexed)
        self.assertIsNone(indexed.get('created_at'))
        self.assertRaises(AttributeError, getattr, indexed, 'launched_at')
        self.assertEqual('srv', indexed['display_name'])

    def test_the_metadata_of_a_join_and_the_row_unchanged(self):
        # The metadata of Nova's manual join is given beside the row, which
        # may be one a driver keeps for other requests.
        indexed = dict(self.row, id=ids.index_id(5, 3))
        del indexed['metadata'], indexed['system_metadata']
        before = dict(indexed)
        instance = rows.IndexedInstance(
            indexed, None,
            [{'key': 'k', 'value': 'w', 'deleted': False}],
            [{'key': 'image_os', 'value': 'y', 'deleted': False}])
        self.assertEqual({'k': 'w'}, instance.metadata)
        self.assertEqual({'image_os': 'y'}, instance.system_metadata)
        self.assertEqual(5, instance.id)
        self.assertEqual(before, indexed)

    def test_missing_parts(self):
        self.row['extra'] = {'flavor': None, 'trusted_certs': None}
        self.row['info_cache'] = None
        _, indexed = self.both()
        self.assertRaises(list_base.Unservable, indexed.get_flavor)
        self.assertIsNone(indexed.trusted_certs)
        self.assertEqual([], list(indexed.get_network_info()))

    def nova_refuses(self):
        self.assertRaises(ValueError, objects.Instance._from_db_object,
                          self.ctx, objects.Instance(), dict(self.row), ATTRS)

    def test_a_refused_access_ip_is_unservable_when_read(self):
        # Nova's list builds the Instance, and fails, even where its view
        # does not show the value: so does the row, on reading it.
        for name, value in (('access_ip_v4', 'not-an-address'),
                            ('access_ip_v4', '2001:db8::1'),
                            ('access_ip_v6', '192.0.2.1')):
            kept, self.row[name] = self.row[name], value
            self.nova_refuses()
            self.assertRaises(list_base.Unservable, self.indexed)
            self.row[name] = kept
        self.assertReadsAlike(*self.both())
        # Text taken once is not coerced again for the next row.
        self.assertIn(('access_ip_v4', '10.0.0.1'), rows._TAKEN)

    def test_refused_parts_are_unservable_when_read(self):
        extra = self.row['extra']
        for field, read in (('flavor', lambda i: i.get_flavor()),
                            ('trusted_certs', lambda i: i.trusted_certs)):
            self.row['extra'] = dict(extra, **{field: '{"cur": '})
            self.nova_refuses()
            self.assertRaises(list_base.Unservable, read, self.indexed())
        self.row['extra'] = extra
        self.row['info_cache'] = dict(self.row['info_cache'],
                                      network_info='[{')
        self.nova_refuses()
        self.assertRaises(list_base.Unservable,
                          self.indexed().get_network_info)

    def test_name_template(self):
        self.flags(instance_name_template='inst-%(uuid)s')
        self.assertRaises(list_base.Unservable, rows.check_name_template)
        self.flags(instance_name_template='instance-%08x')
        rows.check_name_template()
        self.assertEqual('instance-00000005', self.both()[1].name)

    def test_expected_cols_still_join_what_rows_read(self):
        # IndexedInstance reads the flavor and certificates from 'extra';
        # Nova must still join them there for these attributes.
        self.assertEqual(
            ['extra', 'extra.flavor', 'extra.trusted_certs'],
            instance_obj._expected_cols(['flavor', 'trusted_certs']))
