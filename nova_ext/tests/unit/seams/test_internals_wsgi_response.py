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
"""Contract: Nova's ResponseObject writes a body with its serializer."""

import datetime

from nova.api.openstack import wsgi as nova_wsgi
from oslo_serialization import jsonutils
import webob

from nova_ext import exception
from nova_ext.seams.internals import wsgi_response
from nova_ext.tests import fixtures as ext_fixtures
from nova_ext.tests.unit import base

BODY = {'servers': [{'id': 'u1', 'name': 'n\u00e9',
                     'created': datetime.datetime(2026, 1, 2, 3, 4, 5),
                     'addresses': {}, 'weight': 1.5, 'locked': None}],
        'servers_links': [{'href': 'http://api/next', 'rel': 'next'}]}


class TestResponseObject(base.TestCase):

    def _request(self):
        return webob.Request.blank('/v2.1/servers')

    def test_novas_text_is_jsonutils_dumps(self):
        # What a serializer given to nova_ext must write.
        response = nova_wsgi.ResponseObject(BODY).serialize(
            self._request(), 'application/json')
        self.assertEqual(jsonutils.dumps(BODY).encode('utf-8'),
                         response.body)
        self.assertIsInstance(nova_wsgi.ResponseObject(BODY).serializer,
                              nova_wsgi.JSONDictSerializer)

    def test_the_serializer_given_writes_the_body(self):
        asked = []

        def dumps(body):
            asked.append(body)
            return '{"written": "by nova_ext"}'
        response = wsgi_response.serialize(BODY, self._request(),
                                           'application/json', dumps)
        self.assertEqual([BODY], asked)
        self.assertEqual(b'{"written": "by nova_ext"}', response.body)
        self.assertEqual(200, response.status_int)
        self.assertEqual('application/json', response.headers['Content-Type'])

    def test_the_same_response_as_novas(self):
        novas = nova_wsgi.ResponseObject(BODY).serialize(
            self._request(), 'application/json')
        ours = wsgi_response.serialize(BODY, self._request(),
                                       'application/json', jsonutils.dumps)
        self.assertEqual(novas.body, ours.body)
        self.assertEqual(novas.status, ours.status)
        self.assertEqual(sorted(novas.headers.items()),
                         sorted(ours.headers.items()))

    def test_refused_on_untested_nova(self):
        self.useFixture(ext_fixtures.UntestedNova())
        self.assertRaises(exception.UnsupportedNovaVersion,
                          wsgi_response.serialize, BODY, self._request(),
                          'application/json', jsonutils.dumps)
