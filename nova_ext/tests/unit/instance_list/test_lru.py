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

from nova_ext.instance_list import lru
from nova_ext.tests.unit import base


class TestLRUCache(base.TestCase):

    def test_least_recently_used_goes_first(self):
        pages = lru.LRUCache(2)
        pages.put('a', ('A',))
        pages.put('b', ('B',))
        self.assertEqual(('A',), pages.get('a'))
        pages.put('c', ('C',))
        self.assertIsNone(pages.get('b'))
        self.assertEqual(('A',), pages.get('a'))
        self.assertEqual(('C',), pages.get('c'))
        self.assertEqual(2, len(pages))
        self.assertEqual((3, 1), (pages.hits, pages.misses))

    def test_a_peek_is_not_a_use(self):
        pages = lru.LRUCache(2)
        pages.put('a', ('A',))
        pages.put('b', ('B',))
        self.assertEqual(('A',), pages.peek('a'))
        self.assertIsNone(pages.peek('c'))
        pages.put('c', ('C',))
        self.assertIsNone(pages.peek('a'))
        self.assertEqual(('B',), pages.peek('b'))
        self.assertEqual((0, 0), (pages.hits, pages.misses))


class TestPerProcess(base.TestCase):

    def test_made_once_anew_when_resized(self):
        caches = lru.PerProcess(lru.LRUCache, 'render_cache_size')
        self.assertIsNone(caches.get(0))
        first = caches.get(2)
        self.assertIs(first, caches.get(2))
        # Switched off, kept unused until the size changes.
        self.assertIsNone(caches.get(0))
        self.assertIs(first, caches.get(2))
        resized = caches.get(3)
        self.assertEqual(3, resized.size)
        self.assertIsNot(first, resized)
        caches.reset()
        self.assertIsNot(resized, caches.get(3))

    def test_sized_by_its_option(self):
        caches = lru.PerProcess(lru.LRUCache, 'page_cache_size')
        self.flags(page_cache_size=0, group='nova_ext_instance_list')
        self.assertIsNone(caches.of(self.conf.conf))
        self.flags(page_cache_size=4, group='nova_ext_instance_list')
        self.assertEqual(4, caches.of(self.conf.conf).size)
        self.flags(page_cache_size=5, group='nova_ext_instance_list')
        self.assertEqual(5, caches.of(self.conf.conf).size)
