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

from nova_ext.instance_list import base
from nova_ext.instance_list import index_checks
from nova_ext.tests.unit import base as test_base


class CellLocalOrderTest(test_base.TestCase):

    def test_a_list_without_sort_keys_is_nova_s(self):
        # Nova's controller passes none where it ignored every key given;
        # its lister then orders by created_at and the cell-local id.
        for keys in (None, []):
            self.assertRaises(base.Unservable,
                              index_checks.cell_local_order, keys)

    def test_a_list_with_sort_keys_is_the_index_s(self):
        # Nova's lister ends these with uuid, unique in every cell.
        for keys in (['created_at'], ['display_name', 'created_at'],
                     ['uuid']):
            self.assertIsNone(index_checks.cell_local_order(keys))
