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
"""The trait engine: service status, and merging callbacks' answers."""

import importlib.util

from nova import objects

from nova_ext.compute_status import engine
from nova_ext.compute_status import trait_callbacks
from nova_ext import exception
from nova_ext.tests.unit import base
from nova_ext.virt import base as virt_base

DISABLED = trait_callbacks.COMPUTE_STATUS_DISABLED
DOWN = trait_callbacks.COMPUTE_STATUS_DOWN


class TestHypervisorStatus(base.TestCase):

    def _service(self, disabled, reason):
        return objects.Service(host='h', disabled=disabled,
                               disabled_reason=reason, forced_down=False)

    def test_only_the_drivers_own_disable_means_hypervisor_lost(self):
        lost = self._service(True, 'AUTO: Connection to libvirt lost: 1')
        self.assertIs(False, engine.hypervisor_up(lost))
        self.assertIs(False, engine.status_of(lost, True).hypervisor_up)
        for service in (self._service(True, 'maintenance'),
                        self._service(True, None),
                        self._service(False, None),
                        # Re-enabled by hand, the old reason left behind.
                        self._service(False, 'AUTO: Connection lost')):
            self.assertIsNone(engine.hypervisor_up(service))

    def test_prefix_is_novas_libvirt_drivers(self):
        # Read, not imported: the driver module wants libvirt's bindings.
        path = importlib.util.find_spec('nova.virt.libvirt.driver').origin
        with open(path) as f:
            source = f.read()
        self.assertIn("\nDISABLE_PREFIX = %r\n"
                      % engine.HYPERVISOR_LOST_PREFIX, source)
        self.assertIn('DISABLE_PREFIX + disable_reason', source)


class _Rogue(virt_base.TraitCallback):
    owned_traits = frozenset(['CUSTOM_MINE'])

    def traits_for(self, old, new):
        return virt_base.TraitChange(remove=frozenset(['CUSTOM_NOT_MINE']))


class _Keeper(virt_base.TraitCallback):
    owned_traits = frozenset([DOWN])

    def traits_for(self, old, new):
        return virt_base.TraitChange(add=frozenset([DOWN]))


class TestEngineMerge(base.TestCase):

    def test_callback_may_not_touch_others_traits(self):
        eng = engine.TraitEngine([('rogue', _Rogue())])
        e = self.assertRaises(exception.NovaExtError, eng.change_for, None,
                              virt_base.ServiceStatus(host='h'))
        self.assertIn('CUSTOM_NOT_MINE', str(e))

    def test_add_wins_over_remove(self):
        eng = engine.TraitEngine([
            ('status', trait_callbacks.ComputeStatusCallback()),
            ('keeper', _Keeper())])
        change = eng.change_for(None, virt_base.ServiceStatus(host='h'))
        self.assertEqual({DOWN}, set(change.add))
        self.assertEqual({DISABLED}, set(change.remove))
        self.assertEqual({DISABLED, DOWN}, eng.owned)
