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
"""The index's own sequence, on a real SQLite index database."""

from nova_ext.index.apply import writer
from nova_ext.index import db
from nova_ext.index.marks import pending
from nova_ext.index.marks import sequence
from nova_ext.index import schema
from nova_ext.tests.unit.index import base as index_base


class TestSequence(index_base.IndexDBTestCase):

    def test_numbers_rise_and_the_ticket_is_the_highest(self):
        self.assertEqual(0, index_base.ticket(self.engine))
        with db.begin_write(self.engine) as conn:
            first = sequence.next_number(conn)
            second = sequence.next_number(conn)
        self.assertLess(first, second)
        self.assertEqual(second, index_base.ticket(self.engine))

    def test_a_read_s_ticket_is_its_own_and_committed(self):
        # What every list that looked before it read is lower, though no
        # mark was recorded between.
        looked = index_base.ticket(self.engine)
        first = sequence.take(self.engine)
        self.assertGreater(first, looked)
        self.assertEqual(first, index_base.ticket(self.engine))
        second = sequence.take(self.engine)
        self.assertGreater(second, first)
        # A ticket marks nothing.
        self.assertEqual({}, pending.take(self.engine, 10))

    def test_a_number_not_committed_is_no_ticket(self):
        with db.begin_write(self.engine) as conn:
            sequence.next_number(conn)
        committed = index_base.ticket(self.engine)
        with self.engine.connect() as conn:
            with conn.begin():
                taken = sequence.next_number(conn)
                self.assertEqual(committed, index_base.ticket(self.engine))
                conn.rollback()
        self.assertGreater(taken, committed)
        self.assertEqual(committed, index_base.ticket(self.engine))

    def test_pruned_numbers_are_never_given_again(self):
        numbers = [pending.mark(self.engine, [('u%d' % n, 1.0)])
                   for n in range(3)]
        with db.begin_write(self.engine) as conn:
            self.assertEqual(2, sequence.prune(conn))
        self.assertEqual(numbers[-1], index_base.ticket(self.engine))
        # The highest is kept: the ticket does not fall back to 0 ...
        with db.begin_write(self.engine) as conn:
            self.assertEqual(0, sequence.prune(conn))
            conn.execute(schema.SEQUENCE.delete())
        # ... and were it deleted, SQLite's AUTOINCREMENT still counts on.
        self.assertGreater(pending.mark(self.engine, [('u', 1.0)]),
                           numbers[-1])


class TestReadAfter(index_base.IndexDBTestCase):
    """Marks the index holds a read after a ticket of (``pending.look``)."""

    CELL = index_base.Cell('cell-1', 3)

    def setUp(self):
        super().setUp()
        self.ids = {}

    def read(self, uuid, ticket):
        source_id = self.ids.setdefault(uuid, len(self.ids) + 1)
        writer.apply(self.engine, index_base.cell_read(
            self.CELL, 1.0, index_base.instance_row(
                uuid, source_id, index_base.T0, uuid), ticket=ticket),
            [uuid])

    def fresh(self, uuids, ticket):
        pending.mark(self.engine, [(u, 1.0) for u in uuids])
        with self.engine.connect() as conn:
            return pending.look(conn, 100, ticket)[1]

    def test_only_reads_with_a_higher_ticket(self):
        self.read('before', 6)
        self.read('at', 7)
        self.read('after', 8)
        self.assertEqual({'after'}, self.fresh(
            ['before', 'at', 'after', 'absent'], 7))

    def test_a_read_again_counts_from_its_own_ticket(self):
        self.read('u', 6)
        self.assertEqual(set(), self.fresh(['u'], 7))
        # A read that found the same rows records its ticket too.
        self.read('u', 9)
        self.assertEqual({'u'}, self.fresh(['u'], 7))
