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
"""The index's Prometheus metrics, against a live cloud.

What a scrape reads is what ``nova-ext-manage index status`` shows at the
same moment: both are compared after real list requests, a change not yet
applied, and with the index unreadable.
"""

import time

from nova import context as nova_context
from oslo_utils import uuidutils
import prometheus_client
from prometheus_client import parser

from nova_ext import conf as ext_conf
from nova_ext.index.marks import pending
from nova_ext.index.upkeep import exporter
from nova_ext.index.upkeep import status
from nova_ext.tests.functional import test_index_parity

CONF = ext_conf.CONF


def scrape(collector):
    """``{(name, labels as a sorted tuple): value}`` of one scrape."""
    registry = prometheus_client.CollectorRegistry()
    registry.register(collector)
    text = prometheus_client.generate_latest(registry).decode()
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in parser.text_string_to_metric_families(text)
            for sample in family.samples}


class TestIndexMetrics(test_index_parity.IndexTestCase):

    #: Whether nova-api keeps pages (``page_cache_size``).
    PAGES = False

    def setUp(self):
        super().setUp()
        self.collector = exporter.IndexCollector(
            CONF, nova_context.get_admin_context)

    def test_a_scrape_is_what_status_shows(self):
        self._create_server(host='compute1-1', networks='none')
        self._create_server(host='compute2-1', networks='none')
        self.sync_index()
        for _ in range(3):
            self.assertSameAnswer(self.admin_api,
                                  'servers/detail?all_tenants=1')
        # Handed to Nova, which answers 400: counted with its reason.
        self.assertSameAnswer(
            self.admin_api, 'servers/detail?all_tenants=1&marker=%s'
            % uuidutils.generate_uuid(), served=False)
        # Due now, with every request's counts: not an interval later.
        clock = self.selector.clock
        self.selector.clock = lambda: clock() + self.selector.report_interval
        self.selector.report()
        self.selector.wait_reported(10)
        pending.mark(self.index.engine, [('a-changed-instance',
                                          time.time() - 30)])

        got = scrape(self.collector)
        report = status.collect(nova_context.get_admin_context(), CONF)
        self.assertEqual(1, got[('nova_ext_index_up', ())])
        self.assertEqual(1, got[('nova_ext_index_schema_at_head', ())])
        self.assertEqual(int(report['healthy']),
                         got[('nova_ext_index_healthy', ())])
        self.assertEqual(1, got[('nova_ext_index_pending_changes', ())])
        # Informational: one mark is within catch_up_limit, whatever its
        # age, and nova-api lists from the index.
        self.assertGreaterEqual(got[(
            'nova_ext_index_oldest_pending_age_seconds', ())], 30)
        self.assertEqual((True, 1), (report['healthy'],
                                     got[('nova_ext_index_healthy', ())]))
        cells = {c['name']: c['instances'] for c in report['cells']}
        self.assertEqual({'cell1': 1, 'cell2': 1},
                         {k: v for k, v in cells.items() if v})
        for name, count in cells.items():
            self.assertEqual(count, got[('nova_ext_index_instances',
                                         (('cell', name),))])
        (api,) = report['api']
        labels = (('driver', api['driver']), ('host', api['host']),
                  ('pid', str(api['pid'])))
        self.assertGreaterEqual(api['counts']['served'], 1)
        for outcome in ('served', 'unavailable', 'latched'):
            self.assertEqual(
                api['counts'][outcome],
                got[('nova_ext_index_api_list_requests_total',
                     tuple(sorted(labels + (('outcome', outcome),))))])
        self.assertEqual(
            {'failed': {'MarkerNotFound: Marker N could not be found.': 1}},
            api['reasons'])
        for outcome, kinds in api['reasons'].items():
            for reason, count in kinds.items():
                self.assertEqual(count, got[(
                    'nova_ext_index_api_list_handed_total',
                    tuple(sorted(labels + (('outcome', outcome),
                                           ('reason', reason)))))])
        self.assertEqual(api['updated_at'], got[(
            'nova_ext_index_api_reported_timestamp_seconds', labels)])
        self.assertEqual(0, got[('nova_ext_index_api_unrecorded_changes',
                                 labels)])
        self.assertEqual(self.PAGES, api['pages'] is not None)
        for outcome, count in (api['pages'] or {}).items():
            self.assertEqual(count, got[(
                'nova_ext_index_api_page_cache_lookups_total',
                tuple(sorted(labels + (('outcome', outcome),))))])
        if self.PAGES:
            # The same page three times: listed once, then kept (its rows
            # and its volumes each).
            self.assertGreaterEqual(api['pages']['kept'], 4, api['pages'])

    def test_an_unreadable_index_is_down(self):
        self.flags(connection='sqlite:////nonexistent/dir/index.sqlite',
                   group='nova_ext_index')
        self.assertEqual({('nova_ext_index_up', ()): 0},
                         scrape(self.collector))


class TestIndexMetricsWithPageCache(TestIndexMetrics):
    """The page cache's lookups, in status and in a scrape."""

    NOVA_EXT_OPTIONS = test_index_parity.CACHED_OPTIONS
    FAST_RENDER = True
    PAGES = True
