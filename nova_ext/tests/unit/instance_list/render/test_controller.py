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
"""Nova's controller lists through its compute API, which nova_ext stops."""

import inspect
import re

import fixtures
from nova.api.openstack.compute import servers as nova_servers
from nova.compute import api as compute_api

from nova_ext.instance_list.render import controller
from nova_ext.tests.unit import base


def _code(function):
    return re.sub(r'\s+', '', inspect.getsource(inspect.unwrap(function)))


class TestController(base.TestCase):

    def setUp(self):
        super().setUp()
        # Nova's compute API wants an RPC transport when it is made.
        self.useFixture(fixtures.MockPatchObject(
            compute_api.API, '__init__', return_value=None))
        controller.servers.cache_clear()
        self.addCleanup(controller.servers.cache_clear)

    def test_nova_lists_through_compute_api_get_all(self):
        ctrl = nova_servers.ServersController
        self.assertIn('self._get_servers(', _code(ctrl.index))
        self.assertIn('self._get_servers(', _code(ctrl.detail))
        self.assertIn('self.compute_api.get_all(', _code(ctrl._get_servers))

    def test_get_all_hands_back_its_arguments(self):
        ctrl = controller.servers()
        self.assertIsInstance(ctrl, nova_servers.ServersController)
        self.assertIs(ctrl, controller.servers())
        listed = self.assertRaises(
            controller._Listed, ctrl.compute_api.get_all, 'ctx', limit=5,
            sort_keys=['uuid'])
        self.assertEqual('ctx', listed.context)
        self.assertEqual({'limit': 5, 'sort_keys': ['uuid']}, listed.kwargs)
