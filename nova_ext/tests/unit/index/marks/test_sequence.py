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

from nova_ext.index import db
from nova_ext.index.marks import pending
from nova_ext.index.marks import sequence
from nova_ext.index import schema
from nova_ext.tests.unit.index import base as index_base


class TestSequence(index_base.IndexDBTestCase):

    def test_numbers_rise_and_the_ticket_is_the_highest(self):
        self.assertEqual(0, sequence.ticket(self.engine))
        with db.begin_write(self.engine) as conn:
            first = sequence.next_number(conn)
            second = sequence.next_number(conn)
        self.assertLess(first, second)
        self.assertEqual(second, sequence.ticket(self.engine))

    def test_a_number_not_committed_is_no_ticket(self):
        with db.begin_write(self.engine) as conn:
            sequence.next_number(conn)
        committed = sequence.ticket(self.engine)
        with self.engine.connect() as conn:
            with conn.begin():
                taken = sequence.next_number(conn)
                self.assertEqual(committed, sequence.ticket(self.engine))
                conn.rollback()
        self.assertGreater(taken, committed)
        self.assertEqual(committed, sequence.ticket(self.engine))

    def test_pruned_numbers_are_never_given_again(self):
        numbers = [pending.mark(self.engine, [('u%d' % n, 1.0)])
                   for n in range(3)]
        with db.begin_write(self.engine) as conn:
            self.assertEqual(2, sequence.prune(conn))
        self.assertEqual(numbers[-1], sequence.ticket(self.engine))
        # The highest is kept: the ticket does not fall back to 0 ...
        with db.begin_write(self.engine) as conn:
            self.assertEqual(0, sequence.prune(conn))
            conn.execute(schema.SEQUENCE.delete())
        # ... and were it deleted, SQLite's AUTOINCREMENT still counts on.
        self.assertGreater(pending.mark(self.engine, [('u', 1.0)]),
                           numbers[-1])
