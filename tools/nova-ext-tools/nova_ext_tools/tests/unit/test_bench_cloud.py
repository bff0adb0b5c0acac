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
"""nova-ext-bench cloud: its statistics, its breakdown, and the floor."""

import json
import os

import fixtures
import prometheus_client
import webob

from nova_ext.index.upkeep import exporter
from nova_ext.tests.unit import base

from nova_ext_tools.bench import cloudbench
from nova_ext_tools.bench import cloudload
from nova_ext_tools.bench import cloudprofile
from nova_ext_tools.cloud import floor
from nova_ext_tools.cloud import novaext
from nova_ext_tools.cmd import bench as bench_cmd


class TestPercentile(base.TestCase):

    def test_nearest_rank(self):
        values = list(range(1, 101))
        self.assertEqual(50, cloudload.percentile(values, 0.5))
        self.assertEqual(99, cloudload.percentile(values, 0.99))
        self.assertEqual(7, cloudload.percentile([7], 0.99))
        # Few samples: the p99 is the slowest.
        self.assertEqual(9, cloudload.percentile([9, 1, 5], 0.99))
        self.assertIsNone(cloudload.percentile([], 0.5))


class TestPhases(base.TestCase):

    def _per_client(self, api, clients, *argv):
        args = bench_cmd.parse_args(['cloud'] + list(argv))
        return cloudbench.per_client(args, api, clients)

    def test_nova_ext_phases_make_enough_requests_for_a_p99(self):
        argv = ('--requests', '10', '--stock-requests', '2')
        self.assertEqual([200, 50, 25, 67],
                         [self._per_client(cloudbench.NOVA_EXT, clients,
                                           *argv)
                          for clients in (1, 4, 8, 3)])
        self.assertEqual(2, self._per_client(cloudbench.STOCK, 8, *argv))
        for api in (cloudbench.FLOOR_PAGE, cloudbench.FLOOR_EMPTY):
            self.assertEqual(10, self._per_client(api, 1, *argv))

    def test_requests_per_client_above_the_tail_are_kept(self):
        argv = ('--requests', '30', '--tail-requests', '100')
        self.assertEqual([100, 30],
                         [self._per_client(cloudbench.NOVA_EXT, clients,
                                           *argv)
                          for clients in (1, 4)])

    def test_summary_keeps_the_slowest(self):
        # Of 201 samples, the p99 is the 199th: neither of the two slowest.
        got = cloudbench._summary([0.01] * 199 + [0.5, 0.02], [2.0], [])
        self.assertEqual(10.0, got['p99_ms'])
        self.assertEqual(500.0, got['max_ms'])
        self.assertEqual(201, got['requests'])


class TestCellServices(base.TestCase):

    def test_cores_of_the_cell_services_during_phases(self):
        before = {'nova-compute-cell1': 10.0, 'nova-conductor': 4.0}
        after = {'nova-compute-cell1': 13.0, 'nova-conductor': 5.5,
                 'nova-compute-cell2': 0.5}
        # A service that started meanwhile counts from 0; one that
        # restarted (its seconds went back) counts nothing.
        self.assertEqual(5.0, cloudbench._used(before, after))
        self.assertEqual(0.0, cloudbench._used(
            {'nova-conductor': 9.0}, {'nova-conductor': 2.0}))
        self.assertEqual(0.25, cloudbench._cores(5.0, 20.0))
        self.assertIsNone(cloudbench._cores(1.0, 0))

    def test_the_cells_services_are_those_no_list_asks(self):
        names = ['keystone', 'nova-api', 'nova-api-stock',
                 'nova-compute-cell1', 'nova-conductor',
                 'nova-conductor-cell2', 'nova-scheduler', 'neutron',
                 'nova-ext-indexer']
        self.assertEqual(
            ['nova-compute-cell1', 'nova-conductor', 'nova-conductor-cell2'],
            cloudbench._cell_services(names))


class TestCounters(base.TestCase):
    """The nova-api counters read back from the indexer's /metrics text."""

    def test_outcomes_and_reasons_of_every_process(self):
        def row(pid, reasons):
            return {'host': 'api1', 'pid': pid, 'driver': 'index',
                    'updated_at': 1.0, 'unrecorded': None,
                    'counts': {'served': 5, 'unservable': 2},
                    'reasons': {'unservable': reasons},
                    'pages': {'kept': 3, 'brought': pid, 'listed': 0,
                              'missed': 1}}
        reasons = {'a "quoted" reason': 1,
                   'N captured changes not recorded in the index yet': 1}

        class Collector(object):
            def collect(self):
                return exporter._api([row(1, reasons), row(2, reasons)])
        registry = prometheus_client.CollectorRegistry()
        registry.register(Collector())
        text = prometheus_client.generate_latest(registry).decode()
        self.assertEqual({'served': 10, 'unservable': 4},
                         novaext.list_counters(text))
        self.assertEqual(
            {'unservable: a "quoted" reason': 2,
             'unservable: N captured changes not recorded in the index '
             'yet': 2}, novaext.handed_reasons(text))
        self.assertEqual({'kept': 6, 'brought': 3, 'listed': 0,
                          'missed': 2}, novaext.page_lookups(text))


class TestBreakdown(base.TestCase):

    REQUEST = 'URLMap.__call__ (nova/api/openstack/urlmap.py:305)'

    def test_innermost_component_wins(self):
        stack = [self.REQUEST, '__call__ (keystonemiddleware/auth_token/'
                               '__init__.py:340)',
                 'respond (nova_ext/instance_list/render/__init__.py:70)',
                 '_body (nova_ext/instance_list/index.py:223)',
                 'catch_up (nova_ext/instance_list/catch_up.py:80)',
                 'read (nova_ext/index/apply/source.py:90)']
        # The index query calls the catch-up, inside keystonemiddleware's
        # call of the application: the catch-up is innermost.
        self.assertEqual("catch-up: the cells' check, recorded changes",
                         cloudprofile.classify(stack))

    def test_a_kept_page_is_the_page_caches_but_its_query_is_not(self):
        kept = [self.REQUEST,
                '_body (nova_ext/instance_list/index.py:223)',
                'current (nova_ext/instance_list/page_cache.py:120)',
                'bring (nova_ext/instance_list/page_patch.py:90)']
        self.assertEqual('page cache: kept pages',
                         cloudprofile.classify(kept))
        self.assertEqual('index query (database)', cloudprofile.classify(
            kept + ['list_rows (nova_ext/instance_list/index.py:280)']))

    def test_the_request_specs_are_not_the_views(self):
        stack = [self.REQUEST,
                 'respond (nova_ext/instance_list/render/__init__.py:70)',
                 '_list_view (nova_ext/seams/internals/server_views.py:90)',
                 'request_specs (nova_ext/instance_list/render/view.py:150)',
                 'check (nova_ext/instance_list/render/request_specs.py:180)',
                 '_read (nova_ext/seams/internals/request_specs.py:120)']
        self.assertEqual('request specs: digests, loaded',
                         cloudprofile.classify(stack))
        self.assertEqual("render cache and Nova's view",
                         cloudprofile.classify(stack[:4]))

    def test_waiting_for_neutrons_answers_is_neutrons(self):
        # nova_ext's threads ask Neutron; the request's thread waits.
        stack = [self.REQUEST,
                 'respond (nova_ext/instance_list/render/__init__.py:70)',
                 '_add_security_grps (nova/api/openstack/compute/views/'
                 'servers.py:754)',
                 'bindings (nova_ext/instance_list/render/'
                 'security_groups.py:70)',
                 'result (concurrent/futures/_base.py:451)',
                 'wait (threading.py:327)']
        self.assertEqual('neutron: security groups of the page',
                         cloudprofile.classify(stack))

    def test_the_build_requests_read_and_the_query_checks(self):
        stack = [self.REQUEST,
                 'respond (nova_ext/instance_list/render/__init__.py:70)',
                 '_body (nova_ext/instance_list/render/__init__.py:90)',
                 'check_build_requests (nova_ext/instance_list/render/'
                 'fastpath.py:100)',
                 '_any_build_request (nova_ext/instance_list/render/'
                 'fastpath.py:80)',
                 'scalar (nova_ext/direct_reads.py:90)']
        self.assertEqual('build requests lookup',
                         cloudprofile.classify(stack))
        stack = [self.REQUEST,
                 'respond (nova_ext/instance_list/render/__init__.py:70)',
                 'wrapper (nova/api/validation/__init__.py:410)',
                 '__init__ (nova_ext/seams/internals/schema_validator.py:60)',
                 'validate (jsonschema/validators.py:440)']
        self.assertEqual("Nova's controller: validate the request",
                         cloudprofile.classify(stack))

    def test_threads_not_serving_a_request_are_not_counted(self):
        self.assertIsNone(cloudprofile.classify(
            ['_run (nova_ext/index/apply/worker.py:70)']))
        self.assertEqual(cloudprofile.OTHER, cloudprofile.classify(
            [self.REQUEST, 'wsgify (webob/dec.py:130)']))

    def test_parse_sums_samples_by_component(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, 'raw')
        with open(path, 'w') as f:
            f.write('%s;auth (keystonemiddleware/auth_token/__init__.py:1)'
                    ' 3\n' % self.REQUEST)
            f.write('%s;auth (keystonemiddleware/auth_token/__init__.py:2)'
                    ' 2\n' % self.REQUEST)
            f.write('poll (amqp/transport.py:632) 40\n')
            f.write('%s;dumps (json/encoder.py:200) 5\n' % self.REQUEST)
        self.assertEqual({'keystone token validation': 5,
                          'serialize the body': 5}, cloudprofile.parse(path))

    def test_the_slowest_requests_apart(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'requests-1.jsonl')
        auth = '%s;auth (keystonemiddleware/auth_token/__init__.py:1)' % (
            self.REQUEST)
        dumps = '%s;dumps (json/encoder.py:200)' % self.REQUEST
        with open(path, 'w') as f:
            for ms in range(10, 100, 10):
                f.write(json.dumps({'ms': ms, 'stacks': {dumps: 2}}) + '\n')
            f.write(json.dumps({'ms': 900, 'stacks': {
                auth: 100, dumps: 4, 'poll (amqp/transport.py:632)': 7}}))
        expected = {
            'requests': 1, 'from_ms': 900, 'wall_ms_per_request': 900,
            'components': {'keystone token validation': 500.0,
                           'serialize the body': 20.0}}
        self.assertEqual(expected, cloudprofile.slowest([path]))
        self.assertEqual(2, cloudprofile.slowest([path], 0.2)['requests'])
        self.assertIsNone(cloudprofile.slowest([]))


class TestFloor(base.TestCase):

    def setUp(self):
        super().setUp()
        self.documents = self.useFixture(fixtures.TempDir()).path
        self.passed = []

        def application(environ, start_response):
            self.passed.append(environ['PATH_INFO'])
            start_response('204 No Content', [])
            return [b'']
        self.floor = floor.Floor(application, self.documents)
        body = json.dumps({'servers': [{'id': 'a', 'name': 'x'}]}).encode()
        floor.write_document(self.documents, 'index-admin', False, {
            'Content-Type': 'application/json',
            'OpenStack-API-Version': 'compute 2.100',
            'X-Compute-Request-Id': 'req-1'}, body)
        self.body = body

    def _get(self, **headers):
        request = webob.Request.blank('/v2.1/servers', headers=headers)
        return request.get_response(self.floor)

    def test_answers_the_document(self):
        response = self._get(**{floor.DOCUMENT_HEADER: 'index-admin'})
        self.assertEqual(200, response.status_int)
        self.assertEqual(self.body, response.body)
        self.assertEqual('compute 2.100',
                         response.headers['OpenStack-API-Version'])
        # Request ids are the pipeline's own, not the stored page's.
        self.assertNotIn('X-Compute-Request-Id', response.headers)
        self.assertEqual([], self.passed)

    def test_answers_an_empty_list(self):
        response = self._get(**{floor.DOCUMENT_HEADER: 'index-admin',
                                floor.EMPTY_HEADER: '1'})
        self.assertEqual({'servers': []}, json.loads(response.body))

    def test_other_requests_go_to_nova(self):
        self.assertEqual(204, self._get().status_int)
        self.assertEqual(['/v2.1/servers'], self.passed)
