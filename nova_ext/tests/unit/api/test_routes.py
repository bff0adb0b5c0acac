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
import itertools
import urllib.parse

from nova.api import openstack as nova_openstack
from nova.api.openstack.compute import routes as nova_routes
from nova import context as nova_context
from routes import middleware as routes_middleware
import webob

from nova_ext.api import base as api_base
from nova_ext.api import routes
from nova_ext.tests.unit import base

PROJECT = '0af1-2b'

# Nova's route (path template, method) -> nova_ext's route, and how Nova's
# url variables are named in nova_ext's.
OURS = {
    ('/servers', 'GET'): (api_base.SERVERS_INDEX, {}),
    ('/servers/detail', 'GET'): (api_base.SERVERS_DETAIL, {}),
    ('/servers', 'POST'): (api_base.SERVERS_CREATE, {}),
    ('/servers/{id}/action', 'POST'): (api_base.SERVER_ACTION,
                                       {'id': 'server_id'}),
    ('/servers/{id}', 'DELETE'): (api_base.SERVER_DELETE,
                                  {'id': 'server_id'}),
    ('/servers/{server_id}/os-volume_attachments/{id}', 'PUT'): (
        api_base.VOLUME_ATTACHMENT_UPDATE,
        {'server_id': 'server_id', 'id': 'volume_id'}),
}

PREFIXES = ('', '/' + PROJECT, '/0af1', '/project1', '/' + PROJECT + '/x',
            '/', '//')
PATHS = ('', '/', '/servers', '/servers/', '/servers//', '/servers.json',
         '/servers/detail', '/servers/detail/', '/servers/detail//',
         '/servers/detail.json', '/servers/abc', '/servers/abc/',
         '/servers/a.json', '/servers/a b', '/servers/a%2Fb',
         '/servers/abc/action', '/servers/abc/action/',
         '/servers/abc//action', '/servers//action', '/servers/abc/action/x',
         '/servers/detail/action', '/servers/abc/os-volume_attachments',
         '/servers/abc/os-volume_attachments/v1',
         '/servers/abc/os-volume_attachments/v1/',
         '/servers/abc/os-volume_attachments/v1.json', '/Servers',
         '/servers/abc/os-interface', '/flavors')
METHODS = ('GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH')
QUERIES = ('', 'a=1', '_method=DELETE', '_method=get', '_method=POST',
           '_method=put', '_method=', 'x_method=DELETE')


def _nova_router():
    """Nova's own router, built as APIRouterV21 builds it.

    Each route's controller is its method and path template rather than a
    controller instance, which would need a message bus.
    """
    mapper = nova_openstack.ProjectMapper()
    for path, methods in nova_routes.ROUTE_LIST:
        if isinstance(methods, str):
            mapper.redirect(path, methods)
            continue
        for method, controller_info in methods.items():
            mapper.create_route(path, method, '%s %s' % (method, path),
                                controller_info[1])

    def app(environ, start_response):
        start_response('200 OK', [])
        return [b'']

    return routes_middleware.RoutesMiddleware(app, mapper)


class TestRoutesAgainstNova(base.TestCase):
    """Every nova_ext route matches exactly what Nova's router matches."""

    def setUp(self):
        super().setUp()
        self.ctxt = nova_context.RequestContext('user', PROJECT,
                                                is_admin=False)
        self.nova = _nova_router()

    def _request(self, method, path, query='', form=None):
        request = webob.Request.blank(path, method=method)
        request.environ['PATH_INFO'] = urllib.parse.unquote(path)
        request.environ['QUERY_STRING'] = query
        if form is not None:
            request.content_type = 'application/x-www-form-urlencoded'
            request.body = urllib.parse.urlencode(form).encode()
        request.environ['nova.context'] = self.ctxt
        return request

    def _expected(self, request):
        """What nova_ext must match, from what Nova's router matched."""
        real_method = request.method
        request.call_application(self.nova)
        match = request.environ['wsgiorg.routing_args'][1]
        if not match.get('controller'):
            # No route, or the redirect of '' to '/'.
            return None, None
        method, template = match['controller'].split(' ', 1)
        if (template, method) not in OURS:
            return None, None
        name, names = OURS[(template, method)]
        if match.get('project_id', PROJECT) != PROJECT:
            return None, None
        if name in (api_base.SERVERS_INDEX, api_base.SERVERS_DETAIL) and (
                real_method != method):
            # A list reached by a method override is left to Nova.
            return None, None
        return name, {ours: match[theirs] for theirs, ours in names.items()}

    def test_generated_requests(self):
        compared = matched = 0
        for prefix, path, method, query in itertools.product(
                PREFIXES, PATHS, METHODS, QUERIES):
            expected = self._expected(
                self._request(method, prefix + path, query))
            got = routes.match(
                self._request(method, prefix + path, query).environ)
            self.assertEqual(expected, got,
                             '%s %s?%s' % (method, prefix + path, query))
            compared += 1
            matched += expected[0] is not None
        # The set must reach every nova_ext route, each in both forms.
        self.assertGreater(matched, 2 * len(OURS))
        self.assertEqual(len(PREFIXES) * len(PATHS) * len(METHODS) *
                         len(QUERIES), compared)

    def test_form_posts(self):
        for path, form in itertools.product(
                ('/servers', '/servers/abc', '/servers/abc/action',
                 '/servers/detail'),
                ({'_method': 'DELETE'}, {'_method': 'GET'}, {'a': '1'}, {})):
            expected = self._expected(self._request('POST', path, form=form))
            request = self._request('POST', path, form=form)
            self.assertEqual(expected, routes.match(request.environ),
                             'POST %s %s' % (path, form))
            # Nova's router still reads the form after nova_ext did.
            self.assertEqual(expected, self._expected(request))

    def test_examples(self):
        # Fixed examples, so a change in both routers at once is seen.
        cases = [
            ('GET', '/servers', (api_base.SERVERS_INDEX, {})),
            ('GET', '/servers/', (None, None)),
            ('GET', '/servers/detail/', (None, None)),
            ('GET', '/servers/detail//', (None, None)),
            ('POST', '/servers/abc/action/', (None, None)),
            ('POST', '/servers/abc/action',
             (api_base.SERVER_ACTION, {'server_id': 'abc'})),
            ('GET', '/%s/servers/detail' % PROJECT,
             (api_base.SERVERS_DETAIL, {})),
            ('DELETE', '/servers/abc/', (None, None)),
            ('GET', '/project1/servers', (None, None)),
            ('GET', '/0af1/servers', (None, None)),
        ]
        for method, path, expected in cases:
            request = self._request(method, path)
            self.assertEqual(expected, routes.match(request.environ),
                             '%s %s' % (method, path))
            self.assertEqual(expected, self._expected(request))
        request = self._request('POST', '/servers/abc', '_method=DELETE')
        self.assertEqual((api_base.SERVER_DELETE, {'server_id': 'abc'}),
                         routes.match(request.environ))

    def test_no_context_leaves_project_form_to_nova(self):
        request = self._request('GET', '/%s/servers' % PROJECT)
        del request.environ['nova.context']
        self.assertEqual((None, None), routes.match(request.environ))
