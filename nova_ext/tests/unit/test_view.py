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
"""nova_ext's copy of Nova's _list_view is Nova's, but for one call."""

import inspect
import re

from nova.api.openstack.compute.views import servers as views_servers

from nova_ext.instance_list import view
from nova_ext.tests.unit import base


def _code(function):
    """The statements of a function: no comments, blank lines or wrapping."""
    source = inspect.getsource(function)
    source = re.sub(r'#[^\n]*', '', source)
    return re.sub(r'\s+', '', source)


class TestListViewCopy(base.TestCase):

    def test_same_as_novas_but_the_request_specs(self):
        nova = _code(views_servers.ViewBuilder._list_view)
        ours = _code(view.ViewBuilder._list_view)
        # Nova's docstring is not copied.
        nova = re.sub(r'"""[^"]*"""', '', nova)
        ours = ours.replace(
            'request_specs.get_by_instance_uuids(',
            'objects.RequestSpec.get_by_instance_uuids(').replace(
            'views_servers.', '')
        self.assertEqual(nova, ours,
                         'Nova changed ViewBuilder._list_view: compare it '
                         'with nova_ext.instance_list.view and update the '
                         'copy, then the Nova versions nova_ext supports')

    def test_nova_reads_a_pages_volumes_through_one_method(self):
        # nova_ext's ViewBuilder overrides that method to read the volumes
        # from the index; if Nova's detail() stopped calling it, the page
        # would be right but read from every cell again.
        self.assertIn('self._get_instance_bdms_in_multiple_cells(',
                      _code(views_servers.ViewBuilder.detail))
        self.assertIsNot(
            views_servers.ViewBuilder._get_instance_bdms_in_multiple_cells,
            view.ViewBuilder._get_instance_bdms_in_multiple_cells)
