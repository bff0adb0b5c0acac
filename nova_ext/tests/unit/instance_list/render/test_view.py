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
"""A list without details, as nova_ext's view builder renders it."""

from unittest import mock

import fixtures
from nova.api.openstack import api_version_request
from nova.compute import api as compute_api

from nova_ext.instance_list.render import render_cache
from nova_ext.instance_list.render import request_specs
from nova_ext.instance_list.render import rows
from nova_ext.instance_list.render import view
from nova_ext.tests.unit import base


def _server(**values):
    """A row of a list without details (narrow.LISTED)."""
    row = {'id': 7, 'uuid': 'u1', 'deleted': 0, 'metadata': [],
           'system_metadata': []}
    row.update(values)
    return rows.IndexedInstance(row)


def _request(version='2.100'):
    return mock.Mock(
        api_version_request=api_version_request.APIVersionRequest(version),
        application_url='http://api/v2.1', url='http://api/v2.1/servers',
        params={}, environ={'nova.context': mock.Mock(is_admin=True,
                                                      project_id='p1')})


class TestPageRenderBasic(base.TestCase):

    def setUp(self):
        super().setUp()
        self.cache = render_cache.RenderCache(10)
        self.render = view.PageRender(self.cache, _request(), '')
        self.rendered = []

    def basic(self, request, instance, **kwargs):
        self.rendered.append(instance['uuid'])
        return {'server': {'id': instance['uuid'],
                           'name': instance.get('display_name'),
                           'links': [{'rel': 'self', 'href': 'h'}]}}

    def test_a_document_is_rendered_once_and_copied(self):
        server = _server(display_name='one')
        first = self.render.basic(self.basic, _request(), server, {})
        first['server']['name'] = 'changed by the caller'
        again = self.render.basic(self.basic, _request(), server, {})
        self.assertEqual(['u1'], self.rendered)
        self.assertEqual('one', again['server']['name'])
        self.assertEqual(1, self.cache.hits)

    def test_a_rename_is_rendered_again(self):
        self.render.basic(self.basic, _request(),
                          _server(display_name='one'), {})
        got = self.render.basic(self.basic, _request(),
                                _server(display_name='two'), {})
        self.assertEqual(['u1', 'u1'], self.rendered)
        self.assertEqual('two', got['server']['name'])

    def test_a_server_without_a_name_is_not_kept(self):
        for _ in range(2):
            self.render.basic(self.basic, _request(), _server(), {})
        self.assertEqual(['u1', 'u1'], self.rendered)
        self.assertEqual(0, len(self.cache))


class TestListReadsNoSpecs(base.TestCase):

    def setUp(self):
        super().setUp()
        # Nova's compute API wants an RPC transport when it is made.
        self.useFixture(fixtures.MockPatchObject(
            compute_api.API, '__init__', return_value=None))
        self.specs = self.useFixture(fixtures.MockPatchObject(
            request_specs, 'get_by_instance_uuids', return_value=[])).mock

    def test_only_while_the_list_is_rendered(self):
        builder = view.ViewBuilder()
        self.assertEqual({'servers': []}, builder.index(_request(), []))
        self.assertEqual(0, self.specs.call_count)
        # Afterwards (a detailed page of the same thread) they are read.
        builder.request_specs(None, ['u1'])
        self.specs.assert_called_once_with(None, ['u1'])

    def test_reset_when_the_list_fails(self):
        builder = view.ViewBuilder()
        with mock.patch.object(builder, '_get_collection_links',
                               side_effect=ValueError):
            self.assertRaises(ValueError, builder.index, _request(), [])
        builder.request_specs(None, ['u1'])
        self.assertEqual(1, self.specs.call_count)
