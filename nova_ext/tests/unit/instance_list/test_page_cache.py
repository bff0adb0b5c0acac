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

from nova_ext import conf as ext_conf
from nova_ext.instance_list import page_cache
from nova_ext.tests.unit import base


class TestPageCache(base.TestCase):

    def test_keys(self):
        admin = types.SimpleNamespace(is_admin=True, project_id='p',
                                      user_id='u', read_deleted='no')
        member = types.SimpleNamespace(is_admin=False, project_id='p',
                                       user_id='u', read_deleted='no')
        query = ({'deleted': False, 'tags': ['x']}, 1000, None)
        key = page_cache.key((3, 't'), admin, query)
        self.assertEqual(key, page_cache.key(
            (3, 't'), admin, ({'deleted': False, 'tags': ['x']}, 1000,
                              None)))
        for other in (page_cache.key((4, 't'), admin, query),
                      page_cache.key((3, 'u'), admin, query),
                      page_cache.key((3, 't'), member, query),
                      page_cache.key((3, 't'), admin, (
                          {'deleted': False, 'tags': ['y']}, 1000, None)),
                      page_cache.key((3, 't'), admin, (
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
