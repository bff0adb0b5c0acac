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

import io
import json
from wsgiref import util

import prometheus_client

from nova_ext.service import endpoint
from nova_ext.tests.unit import base


class TestEndpoint(base.TestCase):
    """The endpoint's WSGI application, called as its server calls it.

    Unit tests run under eventlet, the services on native threads: the
    socket is scraped in the services' functional tests.
    """

    def setUp(self):
        super().setUp()
        self.registry = prometheus_client.CollectorRegistry()
        self.sweeps = prometheus_client.Counter(
            'nova_ext_test_sweeps', 'Sweeps.', registry=self.registry)
        self.state = (True, {'last_sweep_age': 1.5})
        self.endpoint = endpoint.Endpoint('127.0.0.1', 0, self.registry,
                                          self.health)

    def health(self):
        if isinstance(self.state, Exception):
            raise self.state
        return self.state

    def get(self, path):
        environ = {'PATH_INFO': path, 'REQUEST_METHOD': 'GET',
                   'wsgi.input': io.BytesIO()}
        util.setup_testing_defaults(environ)
        started = []

        def start_response(status, headers, exc_info=None):
            started.append((int(status.split()[0]), dict(headers)))
        body = b''.join(self.endpoint(environ, start_response)).decode()
        status, headers = started[0]
        return status, headers.get('Content-Type'), body

    def test_metrics(self):
        self.sweeps.inc(3)
        status, kind, body = self.get('/metrics')
        self.assertEqual(200, status)
        self.assertTrue(kind.startswith('text/plain'), kind)
        self.assertIn('nova_ext_test_sweeps_total 3.0', body)

    def test_healthcheck(self):
        self.assertEqual(
            (200, 'application/json',
             {'healthy': True, 'last_sweep_age': 1.5}),
            self._health())
        self.state = (False, {'reason': 'no sweep for 300 s'})
        self.assertEqual(
            (503, 'application/json',
             {'healthy': False, 'reason': 'no sweep for 300 s'}),
            self._health())
        self.state = RuntimeError('boom')
        self.assertEqual(
            (503, 'application/json',
             {'healthy': False, 'error': 'RuntimeError: boom'}),
            self._health())

    def _health(self):
        status, kind, body = self.get('/healthcheck')
        return status, kind, json.loads(body)

    def test_other_paths(self):
        self.assertEqual(404, self.get('/')[0])
        self.assertEqual(404, self.get('/metrics/x')[0])
