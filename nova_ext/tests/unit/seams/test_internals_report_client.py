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
"""Contract: the report client's provider cache, as nova_ext uses it."""

import inspect
from unittest import mock

from nova.compute import provider_tree
from nova.scheduler.client import report

from nova_ext import exception
from nova_ext.seams.internals import report_client
from nova_ext.tests import fixtures as ext_fixtures
from nova_ext.tests.unit import base

RP = '7d6a4b9c-35f6-4c1e-9a50-0f2b3c4d5e6f'


def _params(func):
    return list(inspect.signature(func).parameters)


class _Ctxt(object):
    global_id = 'req-1'


class TestReportClient(base.TestCase):

    def setUp(self):
        super().setUp()
        # An adapter of its own: no keystone, and every call is seen.
        self.adapter = mock.Mock()
        self.client = report.SchedulerReportClient(adapter=self.adapter)

    def test_names_and_signatures(self):
        self.assertIsInstance(self.client._provider_tree,
                              provider_tree.ProviderTree)
        tree = provider_tree.ProviderTree
        self.assertEqual(['self', 'name_or_uuid'], _params(tree.exists))
        self.assertEqual(['self', 'name', 'uuid', 'generation'],
                         _params(tree.new_root))
        self.assertEqual(['self', 'name_or_uuid', 'traits', 'generation'],
                         _params(tree.update_traits))
        # The public calls the engine makes around the cache.
        client = report.SchedulerReportClient
        self.assertEqual(['self', 'context', 'rp_uuid'],
                         _params(client.get_provider_traits))
        self.assertEqual(['self', 'context', 'rp_uuid', 'traits',
                          'generation'],
                         _params(client.set_traits_for_provider))

    def test_set_traits_needs_the_cache(self):
        # Why the engine fills the cache: an unknown provider fails...
        self.assertRaises(ValueError, self.client.set_traits_for_provider,
                          _Ctxt(), RP, {'CUSTOM_A'}, generation=3)
        report_client.cache_provider_traits(self.client, RP, {'CUSTOM_A'}, 3)
        tree = self.client._provider_tree
        self.assertEqual({'CUSTOM_A'}, tree.data(RP).traits)
        self.assertEqual(3, tree.data(RP).generation)
        # ... and traits that match the cache are not written.
        self.client.set_traits_for_provider(_Ctxt(), RP, {'CUSTOM_A'},
                                            generation=3)
        self.adapter.put.assert_not_called()

    def test_cache_updated_in_place(self):
        report_client.cache_provider_traits(self.client, RP, {'CUSTOM_A'}, 3)
        report_client.cache_provider_traits(self.client, RP, {'CUSTOM_B'}, 4)
        data = self.client._provider_tree.data(RP)
        self.assertEqual(({'CUSTOM_B'}, 4), (data.traits, data.generation))
        self.assertEqual([RP], self.client._provider_tree.get_provider_uuids())

    def test_refused_on_untested_nova(self):
        self.useFixture(ext_fixtures.UntestedNova())
        self.assertRaises(exception.UnsupportedNovaVersion,
                          report_client.cache_provider_traits,
                          self.client, RP, {'CUSTOM_A'}, 3)
        self.assertFalse(self.client._provider_tree.exists(RP))
