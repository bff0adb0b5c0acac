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
import fixtures
from nova.scheduler import request_filter
from packaging import specifiers

from nova_ext import compat
from nova_ext import exception
from nova_ext.seams import scheduler as scheduler_ep
from nova_ext.tests import plugins as test_plugins
from nova_ext.tests.unit import base


class TestAttach(base.TestCase):

    def setUp(self):
        super().setUp()
        self.install_test_plugins()
        original = list(request_filter.ALL_REQUEST_FILTERS)
        self.addCleanup(request_filter.ALL_REQUEST_FILTERS.__setitem__,
                        slice(None), original)
        self.nova_filters = original

    def test_nothing_enabled_changes_nothing(self):
        self.assertEqual([], scheduler_ep.attach())
        self.assertEqual(self.nova_filters, request_filter.ALL_REQUEST_FILTERS)

    def test_appended_after_nova_once(self):
        self.flags(request_filters=['test-forbid-trait'],
                   group='nova_ext_scheduler')
        for _ in range(3):
            self.assertEqual([], scheduler_ep.attach())
        pipeline = request_filter.ALL_REQUEST_FILTERS
        self.assertEqual(self.nova_filters, pipeline[:-1])
        self.assertEqual(['test-forbid-trait'], scheduler_ep.attached())

    def test_runs_through_nova_process_reqspec(self):
        self.flags(request_filters=['test-forbid-trait'],
                   group='nova_ext_scheduler')
        scheduler_ep.attach()
        # Nova's own filters need a full RequestSpec; run only ours through
        # the traced wrapper Nova would call.
        ours = request_filter.ALL_REQUEST_FILTERS[-1]

        class Spec(object):
            instance_uuid = 'u1'
            root_forbidden = set()
        spec = Spec()
        self.assertTrue(ours(None, spec))
        self.assertEqual({test_plugins.TEST_TRAIT}, spec.root_forbidden)
        self.assertEqual(['u1'], test_plugins.ForbidTestTrait.calls)

    def test_refuses_untested_nova(self):
        self.flags(request_filters=['test-forbid-trait'],
                   group='nova_ext_scheduler')
        untested = specifiers.SpecifierSet('>=99.0.0')
        self.useFixture(fixtures.MonkeyPatch(
            'nova_ext.compat.TESTED_NOVA', untested))
        self.assertRaises(exception.UnsupportedNovaVersion,
                          compat.check_nova_version, 'x', untested)
        self.assertEqual([], scheduler_ep.attach())
        self.assertEqual(self.nova_filters, request_filter.ALL_REQUEST_FILTERS)

    def test_broken_filter_stops_the_scheduler(self):
        self.flags(request_filters=['test-broken'],
                   group='nova_ext_scheduler')
        self.assertRaises(exception.PluginLoadFailed, scheduler_ep.attach)
