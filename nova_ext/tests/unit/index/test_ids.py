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
"""Index ids: a cell-local id and its cell mapping id in one."""

from nova_ext.index import ids
from nova_ext.tests.unit import base


class TestIds(base.TestCase):

    def test_round_trip(self):
        for source_id, cell_id in ((1, 0), (42, 3), (2 ** 40, 65535)):
            index_id = ids.index_id(source_id, cell_id)
            self.assertEqual(source_id, ids.source_id(index_id))
            self.assertEqual(cell_id, ids.cell_id(index_id))

    def test_orders_like_the_cell_ids(self):
        # Nova's default sort compares cell-local ids across cells.
        self.assertLess(ids.index_id(7, 9), ids.index_id(8, 1))
        self.assertLess(ids.index_id(7, 1), ids.index_id(7, 2))

    def test_cell_id_must_fit(self):
        self.assertRaises(ValueError, ids.index_id, 1, 65536)
        self.assertRaises(ValueError, ids.index_id, 1, -1)
