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
from nova import context as nova_context

from nova_ext.api import base as api_base
from nova_ext.api import routes
from nova_ext.tests.unit import base


class TestRoutes(base.TestCase):

    def setUp(self):
        super().setUp()
        self.ctxt = nova_context.RequestContext('user', 'project1',
                                                is_admin=False)

    def test_table(self):
        cases = [
            ('GET', '/servers', api_base.SERVERS_INDEX, {}),
            ('GET', '/servers/', api_base.SERVERS_INDEX, {}),
            ('GET', '/servers/detail', api_base.SERVERS_DETAIL, {}),
            ('POST', '/servers', api_base.SERVERS_CREATE, {}),
            ('POST', '/servers/abc/action', api_base.SERVER_ACTION,
             {'server_id': 'abc'}),
            ('GET', '/project1/servers/detail', api_base.SERVERS_DETAIL, {}),
            ('POST', '/project1/servers/abc/action',
             api_base.SERVER_ACTION, {'server_id': 'abc'}),
            ('DELETE', '/servers/abc', api_base.SERVER_DELETE,
             {'server_id': 'abc'}),
            ('DELETE', '/project1/servers/abc/', api_base.SERVER_DELETE,
             {'server_id': 'abc'}),
            ('PUT', '/servers/abc/os-volume_attachments/v1',
             api_base.VOLUME_ATTACHMENT_UPDATE,
             {'server_id': 'abc', 'volume_id': 'v1'}),
            ('PUT', '/project1/servers/abc/os-volume_attachments/v1/',
             api_base.VOLUME_ATTACHMENT_UPDATE,
             {'server_id': 'abc', 'volume_id': 'v1'}),
        ]
        for method, path, route, urlvars in cases:
            self.assertEqual((route, urlvars),
                             routes.match(method, path, self.ctxt),
                             '%s %s' % (method, path))

    def test_not_ours(self):
        for method, path in [('GET', '/servers/abc'),
                             ('DELETE', '/servers/abc/action'),
                             ('DELETE', '/servers'),
                             ('PUT', '/servers/detail'),
                             ('GET', '/flavors'),
                             ('GET', '/servers/abc/os-interface'),
                             ('POST', '/servers/abc/action/x'),
                             ('POST', '/servers/abc/os-volume_attachments'),
                             ('DELETE',
                              '/servers/abc/os-volume_attachments/v1'),
                             ('GET', '/servers/abc/os-volume_attachments/v1')]:
            self.assertEqual((None, None),
                             routes.match(method, path, self.ctxt),
                             '%s %s' % (method, path))

    def test_other_project_in_url_is_left_to_nova(self):
        self.assertEqual((None, None), routes.match(
            'GET', '/project2/servers', self.ctxt))
        self.assertEqual((None, None), routes.match(
            'GET', '/project1/servers', None))
