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
"""The harness is what it claims: several cells, real placement, Nova 34."""

from nova import context as nova_context
from nova import objects

from nova_ext.tests.functional import base


class TestHarness(base.NovaExtTestCase):

    def test_servers_land_in_every_cell(self):
        for cell in range(1, self.NUMBER_OF_CELLS + 1):
            self._create_server(
                name='in-cell%d' % cell, host='compute%d-1' % cell,
                networks='none', api=self.admin_api)
        ctxt = nova_context.get_admin_context()
        cells = {}
        for server in self.api.get_servers():
            mapping = objects.InstanceMapping.get_by_instance_uuid(
                ctxt, server['id'])
            cells[server['name']] = mapping.cell_mapping.name
        self.assertEqual({'in-cell1': 'cell1', 'in-cell2': 'cell2'}, cells)
        providers = self.placement.get('/resource_providers').body
        self.assertEqual(
            {'compute1-1', 'compute2-1'},
            {rp['name'] for rp in providers['resource_providers']})
