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
"""Upserts of the marks' tables, on a real SQLite index database."""

from unittest import mock

import fixtures

from nova_ext.index.marks import pending
from nova_ext.index.marks import upsert
from nova_ext.tests.unit.index import base as index_base


class TestUpsert(index_base.IndexDBTestCase):

    def test_an_upsert_is_compiled_once(self):
        pending.mark(self.engine, [('a', 1.0)])
        stmt = upsert.statement(self.engine.dialect.name, 'pending')
        with mock.patch.object(stmt, 'compile',
                               side_effect=AssertionError('compiled again')):
            pending.mark(self.engine, [('a', 2.0)])
            pending.mark(self.engine, [('b', 3.0), ('c', 4.0)])
        self.assertEqual({'a': 2.0, 'b': 3.0, 'c': 4.0},
                         self.lasts())

    def test_mark_without_an_upsert(self):
        self.useFixture(fixtures.MockPatchObject(
            pending, 'AUTOCOMMIT_ROWS', 0))
        # A backend with neither upsert reads, then inserts or updates.
        self.useFixture(fixtures.MockPatchObject(upsert, 'statement',
                                                 return_value=None))
        pending.mark(self.engine, [('a', 10.0), ('b', 7.0)])
        pending.mark(self.engine, [('a', 20.0), ('a', 5.0), ('c', 30.0)])
        self.assertEqual({'a': 20.0, 'b': 7.0, 'c': 30.0},
                         self.lasts())
        self.assertEqual(95.0, pending.oldest_age(self.engine, now=100.0))
        # Holds and notification ids recorded twice are one row each.
        numbers = [pending.mark(self.engine, [('d', 1.0)], [('d', 'h', 1)],
                                told=['m1']) for _ in range(2)]
        self.assertEqual([('d', 'h', 1)], index_base.holds(self.engine))
        self.assertEqual({'m1': numbers[0]}, index_base.told(self.engine))
