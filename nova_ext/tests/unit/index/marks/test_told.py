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
"""Notifications recorded with their marks, on a real SQLite index."""

import fixtures

from nova_ext.index import db
from nova_ext.index.marks import pending
from nova_ext.index.marks import sequence
from nova_ext.index.marks import told
from nova_ext.tests.unit.index import base as index_base


class TestTold(index_base.IndexDBTestCase):

    def test_ids_are_recorded_with_the_number_of_their_marks(self):
        # One SQLite statement per part, and one transaction beyond
        # AUTOCOMMIT_ROWS: both record the ids with the marks' number.
        first = pending.mark(self.engine, [('a', 1.0)], told=['m1', 'm2'])
        many = ['n%d' % i for i in range(pending.AUTOCOMMIT_ROWS + 1)]
        second = pending.mark(self.engine, [('b', 2.0)], told=many)
        got = index_base.told(self.engine)
        self.assertEqual({'m1': first, 'm2': first}, {
            k: v for k, v in got.items() if k.startswith('m')})
        self.assertEqual({second}, {got[i] for i in many})
        self.assertEqual(len(many) + 2, len(got))

    def test_an_id_recorded_again_is_one_row(self):
        # A batch recorded again after a failure that followed its commit.
        first = pending.mark(self.engine, [('a', 1.0)], told=['m1'])
        pending.mark(self.engine, [('a', 1.0)], told=['m1', 'm2'])
        got = index_base.told(self.engine)
        self.assertEqual(['m1', 'm2'], sorted(got))
        self.assertEqual(first, got['m1'])

    def test_found_then_forgotten(self):
        pending.mark(self.engine, [('a', 1.0)], told=['m1', 'm2'])
        with self.engine.connect() as conn:
            self.assertEqual({'m1'}, told.found(conn, ['m1', 'm3', None]))
        db.write(self.engine, lambda conn: told.forget(conn, ['m1']))
        self.assertEqual(['m2'], list(index_base.told(self.engine)))

    def test_ids_that_cannot_be_recorded_are_not(self):
        long_id = 'x' * (told.MAX_ID + 1)
        pending.mark(self.engine, [('a', 1.0)],
                     told=[None, '', long_id, 7, 'm1'])
        self.assertEqual(['m1'], list(index_base.told(self.engine)))
        with self.engine.connect() as conn:
            self.assertEqual(set(), told.found(conn, [None, long_id]))

    def test_prune_drops_ids_older_than_keep_numbers(self):
        self.useFixture(fixtures.MockPatchObject(told, 'KEEP', 2))
        old = pending.mark(self.engine, [('a', 1.0)], told=['old'])
        pending.mark(self.engine, [('a', 1.0)], told=['mid'])
        top = pending.mark(self.engine, [('a', 1.0)], told=['new'])
        self.assertEqual(2, top - old)
        self.assertEqual(0, db.write(self.engine,
                                     lambda conn: told.prune(conn, top)))
        top = pending.mark(self.engine, [('a', 1.0)])
        self.assertEqual(1, db.write(self.engine,
                                     lambda conn: told.prune(conn, top)))
        self.assertEqual(['mid', 'new'],
                         sorted(index_base.told(self.engine)))

    def test_the_indexer_marks_what_was_not_told(self):
        pending.mark(self.engine, [('a', 1.0), ('b', 1.0)],
                     told=['m-a', 'm-b1'])
        pending.unmark(self.engine, pending.take(self.engine, 10))
        found = pending.mark_untold(self.engine, [
            ('a', 2.0, 'm-a'),
            # b has a notification that was not told: marked.
            ('b', 2.0, 'm-b1'), ('b', 3.0, 'm-b2'),
            ('c', 2.0, None)])
        self.assertEqual({'m-a', 'm-b1'}, found)
        self.assertEqual({'b': 3.0, 'c': 2.0}, {
            u: last for u, (_first, last) in index_base.held(
                self.engine).items()})
        self.assertEqual({}, index_base.told(self.engine))
        # Every notification told: no mark, no number taken.
        pending.mark(self.engine, [('d', 1.0)], told=['m-d'])
        with self.engine.connect() as conn:
            before = sequence.current(conn)
        self.assertEqual({'m-d'}, pending.mark_untold(
            self.engine, [('d', 4.0, 'm-d')]))
        with self.engine.connect() as conn:
            self.assertEqual(before, sequence.current(conn))
