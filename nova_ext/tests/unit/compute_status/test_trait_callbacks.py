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
"""The compute-status trait callback."""

from nova_ext.compute_status import engine
from nova_ext.compute_status import trait_callbacks
from nova_ext import exception
from nova_ext.tests.unit import base
from nova_ext import virt
from nova_ext.virt import base as virt_base

DISABLED = trait_callbacks.COMPUTE_STATUS_DISABLED
DOWN = trait_callbacks.COMPUTE_STATUS_DOWN


class TestComputeStatusCallback(base.TestCase):

    def setUp(self):
        super().setUp()
        self.cb = trait_callbacks.ComputeStatusCallback()

    def _traits(self, **status):
        change = self.cb.traits_for(None, virt_base.ServiceStatus(
            host='h', **status))
        return set(change.add), set(change.remove)

    def test_healthy(self):
        self.assertEqual((set(), {DISABLED, DOWN}), self._traits())

    def test_disabled(self):
        self.assertEqual(({DISABLED}, {DOWN}), self._traits(disabled=True))

    def test_down_ways(self):
        for status in ({'forced_down': True}, {'up': False},
                       {'hypervisor_up': False},
                       {'forced_down': True, 'up': None}):
            self.assertEqual(({DOWN}, {DISABLED}), self._traits(**status))

    def test_unknown_heartbeat_leaves_down_alone(self):
        self.assertEqual(({DISABLED}, set()),
                         self._traits(up=None, disabled=True))

    def test_loaded_by_name_unknown_fails_clearly(self):
        self.flags(trait_callbacks=['compute-status'],
                   group='nova_ext_compute_status')
        self.assertEqual(['compute-status'],
                         [n for n, _ in virt.load_trait_callbacks(
                             self.conf.conf)])
        self.flags(trait_callbacks=['compute-status', 'no-such'],
                   group='nova_ext_compute_status')
        e = self.assertRaises(exception.PluginNotFound,
                              engine.TraitEngine.from_conf, self.conf.conf)
        self.assertIn("'no-such'", str(e))
        self.assertIn('nova_ext.virt.trait_callbacks', str(e))
