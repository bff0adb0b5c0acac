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
"""What nova_ext relies on of how Nova's list makes its Instances.

``nova_ext.seams.internals.instances`` calls
``nova.objects.instance._expected_cols`` and ``_make_instance_list``, as
Nova's ``get_instance_objects_sorted`` does: these tests fail when Nova's
list stops doing so, or the functions change.
"""

import inspect
import re

from nova.compute import instance_list as nova_instance_list
from nova import context as nova_context
from nova import objects
from nova.objects import instance as instance_obj
from nova.tests.unit import fake_instance

from nova_ext import exception
from nova_ext.seams.internals import instances
from nova_ext.tests import fixtures as ext_fixtures
from nova_ext.tests.unit import base


class TestInstances(base.TestCase):

    def setUp(self):
        super().setUp()
        objects.register_all()
        self.ctx = nova_context.get_admin_context()

    def test_novas_list_makes_its_instances_so(self):
        source = re.sub(r'\s+', '', inspect.getsource(
            nova_instance_list.get_instance_objects_sorted))
        self.assertIn('instance_obj._expected_cols(expected_attrs)', source)
        self.assertIn('instance_obj._make_instance_list(ctx,'
                      'objects.InstanceList(),instance_generator,'
                      'expected_attrs)', source)

    def test_expected_cols(self):
        attrs = ['info_cache', 'fault', 'metadata', 'flavor', 'services']
        self.assertEqual(instance_obj._expected_cols(attrs),
                         instances.expected_cols(attrs))
        self.assertIn('info_cache', instances.expected_cols(attrs))
        self.assertIn('extra', instances.expected_cols(['flavor']))

    def test_make_instance_list(self):
        rows = [fake_instance.fake_db_instance(id=n, host='h%d' % n)
                for n in (1, 2)]
        made = instances.make_instance_list(self.ctx, rows, ['metadata'])
        self.assertIsInstance(made, objects.InstanceList)
        self.assertEqual([row['uuid'] for row in rows],
                         [inst.uuid for inst in made])
        self.assertEqual(['h1', 'h2'], [inst.host for inst in made])
        self.assertTrue(all(inst.obj_attr_is_set('metadata')
                            for inst in made))
        self.assertIs(self.ctx, made[0]._context)


class TestVersionGate(base.TestCase):

    def test_refuses_on_an_untested_nova(self):
        self.useFixture(ext_fixtures.UntestedNova())
        self.assertRaises(exception.UnsupportedNovaVersion,
                          instances.expected_cols, [])
        self.assertRaises(exception.UnsupportedNovaVersion,
                          instances.make_instance_list, None, [], [])

    def test_the_installed_nova_is_tested(self):
        instances._check()
