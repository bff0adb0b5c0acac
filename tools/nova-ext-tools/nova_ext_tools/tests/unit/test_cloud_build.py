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
"""Whether ``nova-ext-cloud start`` builds a cloud or starts it again."""

import json
import os

import fixtures

from nova_ext.tests.unit import base

from nova_ext_tools.cloud import build
from nova_ext_tools.cloud import procs


class TestStartAgain(base.TestCase):

    def setUp(self):
        super().setUp()
        self.state = self.useFixture(fixtures.TempDir()).path
        self.cloud = build.Cloud(self.state)

    def built_on(self, ports):
        with open(os.path.join(self.state, 'cloud.json'), 'w') as f:
            json.dump({'state': self.state, 'ports': ports}, f)

    def test_built_once_its_info_is_written(self):
        self.assertFalse(self.cloud.built())
        self.built_on(self.cloud.lay.ports)
        self.assertTrue(self.cloud.built())

    def test_a_cloud_built_on_other_ports_is_not_started(self):
        # Its configuration names the ports it was built on: started on
        # others, its services would not find each other.
        self.built_on({k: port + 1000
                       for k, port in self.cloud.lay.ports.items()})
        e = self.assertRaises(procs.CloudError, self.cloud.resume)
        self.assertIn('NOVA_EXT_CLOUD_PORT_BASE it was built with', str(e))
        self.assertEqual([], self.cloud.ps.names())
