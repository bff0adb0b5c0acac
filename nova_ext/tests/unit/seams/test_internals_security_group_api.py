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
"""What nova_ext relies on of Nova's security group lookup for a page.

``nova_ext.seams.internals.security_group_api`` asks Nova's
``_get_ports_from_server_list`` for chunks of a page's servers of Nova's
own size, then does what the rest of Nova's
``get_instances_security_groups_bindings`` does (a checked copy): these
tests fail when Nova changes that function, stops chunking by
``MAX_SEARCH_IDS`` or changes the helpers' signatures.
"""

import inspect
import re

from nova.network import security_group_api as nova_sg_api

from nova_ext import exception
from nova_ext.seams.internals import security_group_api
from nova_ext.tests import fixtures as ext_fixtures
from nova_ext.tests.unit import base


def _code(function):
    source = re.sub(r'#[^\n]*', '', inspect.getsource(function))
    return re.sub(r'\s+', '', source)


class TestNovasLookup(base.TestCase):

    def test_ids_per_request_are_novas(self):
        per = security_group_api.ids_per_request()
        self.assertIsInstance(per, int)
        self.assertGreater(per, 0)
        self.assertIs(nova_sg_api.MAX_SEARCH_IDS, per)

    def test_nova_asks_for_ports_in_chunks_of_that_size(self):
        self.assertIn('_chunk_by_ids(servers,MAX_SEARCH_IDS)',
                      _code(nova_sg_api._get_ports_from_server_list))
        self.assertIn("'device_id':ids",
                      _code(nova_sg_api._get_ports_from_server_list))

    def test_bindings_of_ports_is_novas_after_the_ports(self):
        nova = _code(nova_sg_api.get_instances_security_groups_bindings)
        nova = re.sub(r'"""[^"]*"""', '', nova)
        ours = _code(security_group_api.bindings_of_ports)
        ours = re.sub(r'"""[^"]*"""', '', ours)
        ours = ours.replace('_check()', '').replace(
            'defbindings_of_ports(context,ports,detailed=False):',
            'defget_instances_security_groups_bindings(context,servers,'
            'detailed=False):').replace(
            'neutron=neutronapi.get_client(context)',
            'neutron=neutronapi.get_client(context)'
            'ports=_get_ports_from_server_list(servers,neutron)').replace(
            'security_group_api.', '').replace(
            '(_convert_to_nova_security_group_format(port_sg))',
            '_convert_to_nova_security_group_format(port_sg)')
        self.assertEqual(nova, ours,
                         'Nova changed get_instances_security_groups_'
                         'bindings: compare it with nova_ext.seams.'
                         'internals.security_group_api and update the '
                         'copy, then the Nova versions nova_ext supports')

    def test_the_helpers_signatures(self):
        self.assertEqual(
            ['servers', 'neutron'],
            list(inspect.signature(
                nova_sg_api._get_ports_from_server_list).parameters))
        self.assertEqual(
            ['ports', 'neutron', 'fields'],
            list(inspect.signature(
                nova_sg_api._get_secgroups_from_port_list).parameters))
        self.assertEqual(
            ['context', 'servers', 'detailed'],
            list(inspect.signature(
                nova_sg_api.get_instances_security_groups_bindings
            ).parameters))

    def test_refuses_on_an_untested_nova(self):
        self.useFixture(ext_fixtures.UntestedNova())
        for call in (security_group_api.ids_per_request,
                     lambda: security_group_api.ports(None, ['a']),
                     lambda: security_group_api.bindings_of_ports(None, [])):
            self.assertRaises(exception.UnsupportedNovaVersion, call)

    def test_the_installed_nova_is_tested(self):
        security_group_api._check()
