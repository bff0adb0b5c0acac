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
"""Each seam attaches through configuration alone, and is inert otherwise.

These tests also guard the one place nova_ext reaches into Nova (the
request-filter list): if Nova stops calling the list for every scheduling
request, test_request_filter_decides_placement fails.
"""

import time

from nova.scheduler import request_filter

from nova_ext.notifications import dispatcher
from nova_ext.seams import api as api_ep
from nova_ext.seams import scheduler as scheduler_ep
from nova_ext.tests import fixtures as ext_fixtures
from nova_ext.tests.functional import base
from nova_ext.tests.functional import fixtures as func_fixtures
from nova_ext.tests import plugins as test_plugins

ENABLED = {
    'nova_ext_api': {'handlers': ['test-failing', 'test-recorder']},
    'nova_ext_notifications': {'consumers': ['test-failing',
                                             'test-recorder']},
    'nova_ext_scheduler': {'request_filters': ['test-forbid-trait']},
}


class _SeamsTestBase(base.NovaExtTestCase):

    def _setup_services(self):
        # An operator installs the plugin package before starting Nova.
        self.useFixture(ext_fixtures.EntryPointsFixture())
        self.addCleanup(test_plugins.reset)
        super()._setup_services()
        # Placement rejects a query that forbids a trait it does not know.
        self.placement.put('/traits/%s' % test_plugins.TEST_TRAIT, None,
                           version='1.6')

    def _boot(self, name, **kwargs):
        return self._create_server(name=name, networks='none',
                                   api=self.admin_api, **kwargs)


class TestSeamsAttached(_SeamsTestBase):
    NOVA_EXT_OPTIONS = ENABLED

    def test_api_handlers_see_their_routes_only(self):
        self.assertIn(api_ep.NovaExtMiddleware,
                      func_fixtures.wsgi_layers(self.api_fixture.app()))
        self.assertIn("nova_ext attached to nova-api; handlers: "
                      "{'servers:action': ['test-recorder'], "
                      "'servers:create': ['test-recorder'], "
                      "'servers:delete': ['test-recorder'], "
                      "'servers:detail': ['test-failing', 'test-recorder'], "
                      "'servers:index': ['test-recorder'], "
                      "'servers:volume_attachment_update': "
                      "['test-recorder']}",
                      self.stdlog.logger.output)
        server = self._boot('routed')
        self.assertIn('POST None', test_plugins.RecordingHandler.calls)

        listed = self.api.api_get('/servers')
        self.assertEqual('GET None', listed.headers['X-Nova-Ext-Test'])
        self.assertEqual([server['id']],
                         [s['id'] for s in listed.body['servers']])

        # test-failing raises first on this route: the request still gets
        # Nova's answer, through the rest of the chain.
        detail = self.api.api_get('/servers/detail')
        self.assertEqual(200, detail.status)
        self.assertEqual('ACTIVE', detail.body['servers'][0]['status'])
        self.assertEqual('GET None', detail.headers['X-Nova-Ext-Test'])
        self.assertIn('answering from Nova instead', self.stdlog.logger.output)

        action = self.api.api_post('/servers/%s/action' % server['id'],
                                   {'os-stop': None})
        self.assertEqual(202, action.status)
        self.assertEqual('POST %s' % server['id'],
                         action.headers['X-Nova-Ext-Test'])

        shown = self.api.api_get('/servers/%s' % server['id'])
        self.assertNotIn('X-Nova-Ext-Test', shown.headers)
        flavors = self.api.api_get('/flavors')
        self.assertNotIn('X-Nova-Ext-Test', flavors.headers)

    def test_notifications_reach_consumers_and_failures_stay_inside(self):
        self._boot('notified')
        ext = dispatcher.get_dispatcher(None)
        received = test_plugins.RecordingConsumer.received
        # instance.create.end is sent after the server shows ACTIVE.
        deadline = time.monotonic() + 10
        create_end = []
        while not create_end and time.monotonic() < deadline:
            self.assertTrue(ext.drain(10))
            create_end = [n for n in received
                          if n.event_type == 'instance.create.end']
            time.sleep(0.05)
        self.assertEqual(1, len(create_end))
        self.assertEqual('InstanceCreatePayload',
                         create_end[0].payload['nova_object.name'])
        self.assertTrue(create_end[0].publisher_id.startswith(
            'nova-compute:compute'))
        # test-failing raised on every notification; Nova did not notice.
        self.assertGreater(ext.counts['failed'], 0)
        self.assertEqual(ext.counts['queued'], ext.counts['dispatched'])
        self.assertIn("nova_ext notification driver attached; consumers: "
                      "['test-failing', 'test-recorder']",
                      self.stdlog.logger.output)

    def test_request_filter_decides_placement(self):
        self.assertEqual(['test-forbid-trait'], scheduler_ep.attached())
        self.assertIn("nova_ext attached to nova-scheduler; request "
                      "filters: ['test-forbid-trait']",
                      self.stdlog.logger.output)
        marked = self._get_provider_uuid_by_host('compute1-1')
        self._set_provider_traits(marked, [test_plugins.TEST_TRAIT])
        servers = [self._boot('filtered-%d' % n) for n in range(3)]
        self.assertEqual(
            {'compute2-1'},
            {s['OS-EXT-SRV-ATTR:host'] for s in servers})
        self.assertEqual({s['id'] for s in servers},
                         set(test_plugins.ForbidTestTrait.calls))
        # With every provider marked, placement has nothing to offer.
        self._set_provider_traits(self._get_provider_uuid_by_host(
            'compute2-1'), [test_plugins.TEST_TRAIT])
        failed = self._boot('nowhere', expected_state='ERROR')
        self.assertIn('No valid host', failed['fault']['message'])


class TestSeamsAttachedWithProjectInURL(_SeamsTestBase):
    NOVA_EXT_OPTIONS = ENABLED
    USE_PROJECT_ID = True

    def test_legacy_urls_are_routed(self):
        server = self._boot('legacy-url')
        listed = self.api.api_get('/servers/detail')
        self.assertEqual('GET None', listed.headers['X-Nova-Ext-Test'])
        action = self.api.api_post('/servers/%s/action' % server['id'],
                                   {'os-stop': None})
        self.assertEqual('POST %s' % server['id'],
                         action.headers['X-Nova-Ext-Test'])


class TestSeamsAttachedNothingEnabled(_SeamsTestBase):
    """The operator attached every seam but switched nothing on."""

    def test_pure_pass_through(self):
        types = func_fixtures.wsgi_layers(self.api_fixture.app())
        self.assertNotIn(api_ep.NovaExtMiddleware, types)
        self.assertIn('nova_ext attached to nova-api; handlers: none',
                      self.stdlog.logger.output)
        self.assertEqual([], scheduler_ep.attached())
        self._boot('plain')
        self.assertNotIn('X-Nova-Ext-Test',
                         self.api.api_get('/servers/detail').headers)
        ext = dispatcher.get_dispatcher(None)
        self.assertGreater(ext.counts['received'], 0)
        self.assertEqual(0, ext.counts['queued'])
        self.assertEqual([], test_plugins.RecordingHandler.calls)


class TestSeamsNotAttached(_SeamsTestBase):
    """Options set, plugins installed, but no seam in the configuration."""

    NOVA_EXT_SEAMS = ()
    NOVA_EXT_OPTIONS = ENABLED

    def test_nothing_runs(self):
        nova_filters = list(request_filter.ALL_REQUEST_FILTERS)
        self._boot('untouched')
        self.assertNotIn('X-Nova-Ext-Test',
                         self.api.api_get('/servers/detail').headers)
        self.assertEqual([], test_plugins.RecordingHandler.calls)
        self.assertEqual([], test_plugins.ForbidTestTrait.calls)
        self.assertEqual([], test_plugins.RecordingConsumer.received)
        self.assertIsNone(dispatcher._DISPATCHER)
        self.assertEqual(nova_filters, request_filter.ALL_REQUEST_FILTERS)
        self.assertNotIn('nova_ext attached', self.stdlog.logger.output)
        self.assertNotIn(api_ep.NovaExtMiddleware,
                         func_fixtures.wsgi_layers(self.api_fixture.app()))
        self.assertNotIn(func_fixtures.ATTACH,
                         func_fixtures.CONF.filter_scheduler.available_filters)
