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
"""Contract: Nova's ServersController, as rebuild from cell0 runs it."""

import inspect
from unittest import mock

import fixtures
from nova.api.openstack.compute import servers as nova_servers
from nova.compute import api as compute_api

from nova_ext import exception
from nova_ext.seams.internals import servers_controller
from nova_ext.tests import fixtures as ext_fixtures
from nova_ext.tests.unit import base


def _params(func):
    return list(inspect.signature(func).parameters)


class TestServersController(base.TestCase):

    def setUp(self):
        super().setUp()
        # Nova's compute API wants an RPC transport when it is made.
        self.useFixture(fixtures.MockPatchObject(
            compute_api.API, '__init__', return_value=None))

    def test_controller(self):
        ctrl = nova_servers.ServersController
        self.assertEqual(['self', 'req', 'id', 'body'],
                         _params(inspect.unwrap(ctrl._rebuild)))
        self.assertIn('rebuild', ctrl.wsgi_actions)
        self.assertEqual(['self', 'requested_networks'],
                         _params(ctrl._get_requested_networks))

    def test_compute_api_is_replaced(self):
        # Nova's controller makes its compute API in __init__ and calls it
        # through this attribute.
        self.assertIsInstance(
            nova_servers.ServersController().compute_api, compute_api.API)
        ours = object()
        made = servers_controller.controller(ours)
        self.assertIsInstance(made, nova_servers.ServersController)
        self.assertIs(ours, made.compute_api)

    def test_requested_networks_binds(self):
        ctrl = mock.create_autospec(nova_servers.ServersController,
                                    instance=True)
        servers_controller.requested_networks(ctrl, [{'uuid': 'n1'}])
        ctrl._get_requested_networks.assert_called_once_with(
            [{'uuid': 'n1'}])

    def test_refused_on_untested_nova(self):
        self.useFixture(ext_fixtures.UntestedNova())
        ctrl = mock.create_autospec(nova_servers.ServersController,
                                    instance=True)
        self.assertRaises(exception.UnsupportedNovaVersion,
                          servers_controller.requested_networks, ctrl, [])
        self.assertRaises(exception.UnsupportedNovaVersion,
                          servers_controller.controller, object())
        self.assertEqual([], ctrl.method_calls)
