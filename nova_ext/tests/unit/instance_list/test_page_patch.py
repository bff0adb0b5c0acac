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
"""What a kept page is listed anew for without reading anything.

The pages brought up to date are compared with Nova's in
nova_ext.tests.functional.test_index_parity
(``test_kept_pages_are_brought_up_to_date``); these are the cases decided
before any query, so no driver is given.
"""

import datetime

from nova_ext.instance_list import page_cache
from nova_ext.instance_list import page_patch
from nova_ext.tests.unit import base

T = datetime.datetime(2026, 1, 1)


def _row(uuid, n):
    return {'uuid': uuid, 'id': n, 'created_at': T, 'display_name': 'x'}


def _query(marker=None, sort_keys=None, filters=None):
    return (filters or {}, 2, marker, [], sort_keys, None, False, None)


class TestListedAnew(base.TestCase):

    def bring(self, query, rows, changed):
        return page_patch.bring(None, None, query, rows, changed)

    def test_too_many_changed(self):
        changed = set('u%d' % n for n in range(page_patch.AT_MOST + 1))
        self.assertIsNone(self.bring(_query(), (_row('a', 1),), changed))

    def test_the_marker_changed(self):
        self.assertIsNone(self.bring(_query(marker='m'), (_row('a', 1),),
                                     {'m'}))

    def test_a_server_on_the_page_twice(self):
        rows = (_row('a', 1), _row('a', 1))
        self.assertIsNone(self.bring(_query(), rows, {'b'}))

    def test_rows_without_a_sort_key(self):
        self.assertIsNone(self.bring(_query(sort_keys=['host']),
                                     (_row('a', 1),), {'b'}))

    def test_none_of_them_under_the_requests_uuid_filter(self):
        # Nothing to read: the page as it was, with what was worked out
        # from its rows.
        rows = page_cache.Rows((_row('a', 1),))
        rows.memo['worked out'] = True
        brought = self.bring(_query(filters={'uuid': ['a']}), rows, {'b'})
        self.assertIs(rows, brought)
        self.assertEqual({'worked out': True}, brought.memo)
