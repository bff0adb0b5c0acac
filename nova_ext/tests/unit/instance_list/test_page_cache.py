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

import types

import sqlalchemy as sa

from nova_ext import conf as ext_conf
from nova_ext import direct_reads
from nova_ext.index.apply import source
from nova_ext.index import db
from nova_ext.index import generation
from nova_ext.instance_list import page_cache
from nova_ext.tests.unit import base
from nova_ext.tests.unit.index import base as index_base


class TestPageCache(base.TestCase):

    def test_keys(self):
        admin = types.SimpleNamespace(is_admin=True, project_id='p',
                                      user_id='u', read_deleted='no')
        member = types.SimpleNamespace(is_admin=False, project_id='p',
                                       user_id='u', read_deleted='no')
        query = ({'deleted': False, 'tags': ['x']}, 1000, None)
        key = page_cache.key(admin, query)
        self.assertEqual(key, page_cache.key(
            admin, ({'deleted': False, 'tags': ['x']}, 1000, None)))
        for other in (page_cache.key(member, query),
                      page_cache.key(admin, (
                          {'deleted': False, 'tags': ['y']}, 1000, None)),
                      page_cache.key(admin, (
                          {'deleted': False, 'tags': ['x']}, 1000, 'm'))):
            self.assertNotEqual(key, other)


class TestPageCacheSize(base.TestCase):

    def setUp(self):
        super().setUp()
        page_cache.reset()
        self.addCleanup(page_cache.reset)

    def test_sized_by_the_option(self):
        conf = ext_conf.CONF
        self.assertIsNone(page_cache.cache(conf))
        self.flags(page_cache_size=4, group='nova_ext_instance_list')
        pages = page_cache.cache(conf)
        self.assertEqual(4, pages.size)
        self.assertIs(pages, page_cache.cache(conf))


class TestCurrent(index_base.IndexDBTestCase):
    """A kept page, brought to the generation a request read."""

    KEY = ('ctx', 'query')

    def setUp(self):
        super().setUp()
        self.pages = page_cache.PageCache(4)
        self.brought = []
        self.written = 0

    def now(self):
        return generation.read(self.engine, direct_reads.first)

    def write(self, uuid, named=True):
        self.written += 1

        def _write(conn):
            if named:
                generation.touched(conn, [uuid])
            conn.execute(sa.insert(source.INSTANCES).values(
                id=self.written, uuid=uuid, deleted=0))
        db.write(self.engine, _write)
        return self.now()

    def bring(self, value, changed):
        self.brought.append(changed)
        return value + tuple(sorted(changed))

    def current(self, now, bring=None):
        return page_cache.current(self.pages, self.KEY, now, self.engine,
                                  bring or self.bring)

    def test_kept_at_the_same_generation(self):
        now = self.now()
        self.assertIsNone(self.current(now))
        page_cache.keep(self.pages, self.KEY, now, ('a',))
        self.assertEqual(('a',), self.current(now))
        self.assertEqual([], self.brought)
        self.assertEqual({'kept': 1, 'missed': 1},
                         dict(self.pages.outcomes))
        self.assertEqual({'kept': 1, 'brought': 0, 'listed': 0,
                          'missed': 1}, self.pages.counts())

    def test_brought_up_to_date_from_the_changes(self):
        page_cache.keep(self.pages, self.KEY, self.now(), ('a',))
        self.write('u-1')
        now = self.write('u-2')
        self.assertEqual(('a', 'u-1', 'u-2'), self.current(now))
        self.assertEqual([{'u-1', 'u-2'}], self.brought)
        # Kept as of now.
        self.assertEqual(('a', 'u-1', 'u-2'), self.current(now))
        self.assertEqual(1, len(self.brought))
        self.assertEqual({'kept': 1, 'brought': 1},
                         dict(self.pages.outcomes))

    def test_not_a_page_kept_by_a_later_request(self):
        earlier = self.now()
        page_cache.keep(self.pages, self.KEY, self.write('u-1'), ('b',))
        self.assertIsNone(self.current(earlier))
        self.assertEqual([], self.brought)

    def test_listed_anew(self):
        then = self.now()
        page_cache.keep(self.pages, self.KEY, then, ('a',))
        # What bring cannot tell.
        now = self.write('u-1')
        self.assertIsNone(self.current(now, lambda value, changed: None))
        # A write that did not name its instances.
        now = self.write('u-2', named=False)
        self.assertIsNone(self.current(now))
        self.assertEqual([], self.brought)
        # Another index's page.
        page_cache.keep(self.pages, self.KEY, (now[0], 'other'), ('a',))
        self.assertIsNone(self.current(now))
        self.assertEqual({'listed': 3}, dict(self.pages.outcomes))

    def test_brought_on_if_the_index_changed_while_bringing_it(self):
        page_cache.keep(self.pages, self.KEY, self.now(), ('a',))
        now = self.write('u-1')
        moves = ['u-2']

        def bring(value, changed):
            if moves:
                self.write(moves.pop())
            return self.bring(value, changed)
        # The instances written meanwhile are read again, from there: the
        # page is the state of the later generation.
        value, at = page_cache.current_at(self.pages, self.KEY, now,
                                          self.engine, bring)
        self.assertEqual(('a', 'u-1', 'u-2'), value)
        self.assertEqual([{'u-1'}, {'u-2'}], self.brought)
        later = self.now()
        self.assertNotEqual(now, later)
        self.assertEqual(later, at)
        # Kept as of the generation it was brought to.
        self.assertEqual(('a', 'u-1', 'u-2'), self.current(later))
        self.assertEqual({'brought': 1, 'kept': 1},
                         dict(self.pages.outcomes))

    def test_listed_if_the_index_keeps_changing_while_bringing_it(self):
        page_cache.keep(self.pages, self.KEY, self.now(), ('a',))
        now = self.write('u-0')

        def bring(value, changed):
            self.write('u-%d' % (self.written + 1))
            return self.bring(value, changed)
        self.assertIsNone(self.current(now, bring))
        self.assertEqual(page_cache.BRINGS, len(self.brought))
        self.assertEqual({'listed': 1}, dict(self.pages.outcomes))

    def test_kept_as_given(self):
        now = self.now()
        rows = page_cache.Rows(('a',))
        self.assertEqual({}, rows.memo)
        rows.memo['worked out'] = True
        self.assertIs(rows, page_cache.keep(self.pages, self.KEY, now, rows))
        self.assertIs(rows, self.current(now))
        # Brought up to date: what bring gave, the page's new rows with a
        # memo of their own (page_patch.bring).
        later = self.write('u-1')
        brought = self.current(later, lambda value, changed: page_cache.Rows(
            self.bring(value, changed)))
        self.assertEqual(('a', 'u-1'), brought)
        self.assertEqual({}, brought.memo)
        self.assertIs(brought, self.current(later))
        # A page's volumes, as they are.
        volumes = [('a', [])]
        self.assertIs(volumes, page_cache.keep(self.pages, ('volumes',),
                                               later, volumes))

    def test_the_generation_a_page_is_at(self):
        now = self.now()
        self.assertEqual((None, None), page_cache.current_at(
            self.pages, self.KEY, now, self.engine, self.bring))
        page_cache.keep(self.pages, self.KEY, now, ('a',))
        self.assertEqual((('a',), now), page_cache.current_at(
            self.pages, self.KEY, now, self.engine, self.bring))
        later = self.write('u-1')
        self.assertEqual((('a', 'u-1'), later), page_cache.current_at(
            self.pages, self.KEY, later, self.engine, self.bring))

    def reads_of_changes(self):
        """A list the statements that read the index's changes go into."""
        reads = []

        def noted(conn, cursor, statement, parameters, context, many):
            if (statement.lstrip().upper().startswith('SELECT') and
                    'nova_ext_index_changes' in statement):
                reads.append(statement)
        sa.event.listen(self.engine, 'before_cursor_execute', noted)
        self.addCleanup(sa.event.remove, self.engine,
                        'before_cursor_execute', noted)
        return reads

    def test_the_changes_between_two_generations_read_once(self):
        then = self.now()
        page_cache.keep(self.pages, self.KEY, then, ('a',))
        page_cache.keep(self.pages, ('volumes',), then, ('v',))
        now = self.write('u-1')
        reads = self.reads_of_changes()
        self.assertEqual(('a', 'u-1'), self.current(now))
        self.assertEqual(('v', 'u-1'), page_cache.current(
            self.pages, ('volumes',), now, self.engine, self.bring))
        self.assertEqual([{'u-1'}, {'u-1'}], self.brought)
        self.assertEqual(1, len(reads))
        # What could not be told is asked again.
        page_cache.keep(self.pages, self.KEY, now, ('a',))
        later = self.write('u-2', named=False)
        self.assertIsNone(self.current(later))
        page_cache.keep(self.pages, self.KEY, now, ('a',))
        self.assertIsNone(self.current(later))
        self.assertEqual(3, len(reads))
