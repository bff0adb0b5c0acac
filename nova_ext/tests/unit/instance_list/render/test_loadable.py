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
"""The network info of a list without details, loaded as Nova loads it."""

from nova_ext.instance_list import base as list_base
from nova_ext.instance_list.render import loadable
from nova_ext.instance_list.render import narrow
from nova_ext.tests.unit import base


class _Stored(object):
    """The stored network info of each server, and who asked for which."""

    def __init__(self, stored):
        self.stored = stored
        self.asked = []

    def network_info(self, uuids):
        self.asked.append(sorted(uuids))
        return [(uuid, self.stored[uuid][0], self.stored[uuid][1])
                for uuid in uuids]


def _page(rows, memo):
    page = list_base.Page(rows)
    page.memo = memo
    return page


class TestCheckPage(base.TestCase):

    def setUp(self):
        super().setUp()
        loadable.reset()
        self.addCleanup(loadable.reset)
        self.driver = _Stored({'a': (1.0, '[]'), 'b': (1.0, '[]')})

    def rows(self, version=1.0):
        # A page of get_all: a server joined twice is one server.
        return [{'uuid': 'a', narrow.VERSION: version},
                {'uuid': 'b', narrow.VERSION: 1.0},
                {'uuid': 'a', narrow.VERSION: version}]

    def test_kept_rows_looked_at_until_all_were_loaded(self):
        memo = {}
        loadable.check_page(self.driver, _page(self.rows(), memo))
        self.assertEqual([['a', 'b']], self.driver.asked)
        self.assertEqual({}, memo)
        # Nothing to load: these rows need no look again.
        loadable.check_page(self.driver, _page(self.rows(), memo))
        self.assertEqual({'loadable.check_page': True}, memo)
        self.driver.stored['a'] = (2.0, 'not json')
        loadable.check_page(self.driver, _page(self.rows(2.0), memo))
        self.assertEqual([['a', 'b']], self.driver.asked)
        # Rows not kept, or other rows: looked at each time.
        self.assertRaises(list_base.Unservable, loadable.check_page,
                          self.driver, self.rows(2.0))
        self.assertRaises(list_base.Unservable, loadable.check_page,
                          self.driver, _page(self.rows(2.0), {}))
        self.assertEqual([['a', 'b'], ['a'], ['a']], self.driver.asked)

    def test_rows_that_fail_are_looked_at_each_time(self):
        self.driver.stored['b'] = (1.0, 'not json')
        memo = {}
        for _ in range(2):
            self.assertRaises(list_base.Unservable, loadable.check_page,
                              self.driver, _page(self.rows(), memo))
        self.assertEqual({}, memo)
        self.assertEqual([['a', 'b'], ['b']], self.driver.asked)

    def test_a_row_without_a_version_is_loaded_each_time(self):
        memo = {}
        for _ in range(2):
            loadable.check_page(self.driver, _page(self.rows(None), memo))
        self.assertEqual({}, memo)
        self.assertEqual([['a', 'b'], ['a']], self.driver.asked)
