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
"""The servers-list handler renders only what a rows driver lists."""

import gc
from unittest import mock

import fixtures
import webob
import webob.dec

from nova_ext.api import base as api_base
from nova_ext.instance_list import base as list_base
from nova_ext.instance_list import cells
from nova_ext.instance_list import handlers
from nova_ext.instance_list import index
from nova_ext.instance_list import render
from nova_ext.instance_list import searchlight
from nova_ext.instance_list import serving
from nova_ext.seams.internals import heap
from nova_ext.seams.internals import orm
from nova_ext.tests.unit import base


@webob.dec.wsgify
def _nova(request):
    return webob.Response('from nova')


class TestServersListHandler(base.TestCase):

    def setUp(self):
        super().setUp()
        self.flags(driver='index', fast_render=True,
                   group='nova_ext_instance_list')
        render.detach()
        self.addCleanup(render.detach)
        self.selector = mock.MagicMock()
        self.useFixture(fixtures.MockPatchObject(
            serving, 'selector', return_value=self.selector))
        self.respond = self.useFixture(fixtures.MockPatchObject(
            render, 'respond', return_value=webob.Response('rendered'))).mock
        self.handler = handlers.ServersListHandler(self.conf.conf)

    def get(self):
        request = webob.Request.blank('/servers')
        request.environ[api_base.ENVIRON_KEY] = (api_base.SERVERS_INDEX, {})
        return self.handler(request, _nova).text

    def test_loading_it_installs_what_rendering_needs(self):
        self.assertTrue(orm.narrowing())
        render.detach()
        self.assertFalse(orm.narrowing())

    def test_renders_a_rows_drivers_pages(self):
        self.selector.driver = mock.Mock(spec=index.IndexDriver)
        self.assertEqual('rendered', self.get())
        self.selector.stats.add.assert_called_once_with('rendered')

    def test_leaves_other_drivers_pages_to_nova(self):
        self.selector.driver = mock.Mock(spec=searchlight.SearchlightDriver)
        self.assertEqual('from nova', self.get())
        self.respond.assert_not_called()

    def test_declined_pages_are_novas_alone(self):
        self.selector.driver = mock.Mock(spec=index.IndexDriver)
        self.respond.side_effect = render.Declined()
        self.assertEqual('from nova', self.get())
        self.selector.stock_only.assert_called_once_with()

    def test_gc_freeze_after_the_first_rendered_list(self):
        heap.reset()
        self.addCleanup(heap.reset)
        self.selector.driver = mock.Mock(spec=index.IndexDriver)
        self.get()
        self.assertIsNone(heap.frozen())
        self.flags(gc_freeze=True, group='nova_ext_instance_list')
        self.respond.side_effect = render.NotRendered('Nova renders it')
        self.assertEqual('from nova', self.get())
        self.assertIsNone(heap.frozen())
        self.respond.side_effect = None
        self.assertEqual('rendered', self.get())
        frozen = heap.frozen()
        self.assertGreater(frozen, 0)
        # Once: what was frozen, but for the objects freed since.
        self.assertEqual('rendered', self.get())
        self.assertIs(frozen, heap.frozen())
        self.assertLessEqual(gc.get_freeze_count(), frozen)
        self.assertGreater(gc.get_freeze_count(), 0)

    def test_the_index_driver_is_a_rows_driver(self):
        self.assertTrue(issubclass(index.IndexDriver, list_base.RowsDriver))
        for other in (cells.CellsDriver, searchlight.SearchlightDriver):
            self.assertFalse(issubclass(other, list_base.RowsDriver))
