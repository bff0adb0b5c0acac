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
"""Pending marks, on a real SQLite index database."""

import sqlite3
import threading

import fixtures
from oslo_db import exception as db_exc
import sqlalchemy as sa

from nova_ext.index.apply import writer
from nova_ext.index import db
from nova_ext.index.marks import pending
from nova_ext.index.marks import sequence
from nova_ext.index.marks import upsert
from nova_ext.index import schema
from nova_ext.index import sqlite
from nova_ext.tests.unit.index import base as index_base


class TestPending(index_base.IndexDBTestCase):

    def test_mark_keeps_first_and_last(self):
        pending.mark(self.engine, [('a', 10.0), ('a', 5.0), ('b', 7.0)])
        pending.mark(self.engine, [('a', 20.0)])
        self.assertEqual({'a': 20.0, 'b': 7.0},
                         self.lasts())
        self.assertEqual(95.0, pending.oldest_age(self.engine, now=100.0))

    def test_unmark_keeps_renewed_marks(self):
        pending.mark(self.engine, [('a', 10.0), ('b', 10.0)])
        taken = pending.take(self.engine, 10)
        pending.mark(self.engine, [('a', 11.0)])
        pending.unmark(self.engine, taken)
        self.assertEqual({'a': 11.0}, self.lasts())
        self.assertEqual(1, pending.count(self.engine))

    def _read(self, uuid, source_id, ticket):
        """The index's row of ``uuid``, from a read with ``ticket``."""
        writer.apply(self.engine, index_base.cell_read(
            index_base.Cell('cell-1', 3), 1.0, index_base.instance_row(
                uuid, source_id, index_base.T0, uuid), ticket=ticket),
            [uuid])

    def test_look_tells_the_marks_read_after_a_ticket(self):
        pending.mark(self.engine, [('a', 10.0), ('b', 11.0), ('c', 12.0)])
        taken = pending.take(self.engine, 10)
        self._read('a', 1, 7)
        self._read('b', 2, 5)
        with self.engine.connect() as conn:
            self.assertEqual((taken, {'a'}), pending.look(conn, 10, 5))
            self.assertEqual((taken, set()), pending.look(conn, 10, 7))
            # The oldest marks first, as take gives them.
            self.assertEqual(({'a': taken['a'], 'b': taken['b']}, {'a'}),
                             pending.look(conn, 2, 6))
            self.assertEqual(({}, set()), pending.look(conn, 0, 0))

    def test_unmark_runs_again_after_a_deadlock(self):
        # MariaDB picks it as a deadlock's victim once: a lost race, not a
        # failure of the worker.
        pending.mark(self.engine, [('a', 10.0), ('b', 10.0)])
        taken = pending.take(self.engine, 10)
        victims = []

        def deadlock(conn, cursor, statement, *args):
            if statement.startswith('DELETE FROM nova_ext_index_pending') \
                    and not victims:
                victims.append(statement)
                raise db_exc.DBDeadlock()
        sa.event.listen(self.engine, 'before_cursor_execute', deadlock)
        self.addCleanup(sa.event.remove, self.engine,
                        'before_cursor_execute', deadlock)
        pending.unmark(self.engine, taken)
        self.assertEqual(1, len(victims))
        self.assertEqual({}, self.lasts())

    def test_a_renewal_from_a_clock_behind_keeps_the_mark(self):
        # The change after the mark was taken comes from a host whose
        # clock is 5 s behind: its event time is older than the mark's,
        # and the read of the mark's taker may predate it.
        pending.mark(self.engine, [('a', 100.0)])
        taken = pending.take(self.engine, 10)
        pending.mark(self.engine, [('a', 95.0)])
        pending.unmark(self.engine, taken)
        self.assertEqual({'a': 100.0}, self.lasts())
        # Taken again (with its new number), it goes.
        pending.unmark(self.engine, pending.take(self.engine, 10))
        self.assertEqual({}, self.lasts())

    def test_each_mark_takes_the_next_number(self):
        first = pending.mark(self.engine, [('a', 10.0), ('b', 10.0)])
        self.assertEqual({'a': first, 'b': first},
                         pending.take(self.engine, 10))
        # Renewed with an earlier time, 'a' still takes a higher number.
        second = pending.mark(self.engine, [('a', 1.0)])
        self.assertGreater(second, first)
        self.assertEqual({'a': second, 'b': first},
                         pending.take(self.engine, 10))
        self.assertIsNone(pending.mark(self.engine, []))

    def test_no_lag_when_nothing_pending(self):
        self.assertEqual(0.0, pending.oldest_age(self.engine))

    def test_take_oldest_first(self):
        pending.mark(self.engine, [('new', 30.0), ('old', 1.0),
                                   ('mid', 2.0)])
        self.assertEqual(['old', 'mid'],
                         list(pending.take(self.engine, 2)))

    def test_take_passes_over_skipped_marks(self):
        pending.mark(self.engine, [('new', 30.0), ('old', 1.0),
                                   ('mid', 2.0)])
        self.assertEqual(['mid', 'new'],
                         list(pending.take(self.engine, 2, skip={'old'})))
        self.assertEqual(['new'], list(pending.take(
            self.engine, 2, skip=['old', 'mid', 'gone'])))
        self.assertEqual({}, pending.take(self.engine, 2,
                                          skip={'old', 'mid', 'new'}))

    def test_none_left_but_those_passed_over(self):
        self.assertTrue(pending.none_left(self.engine))
        pending.mark(self.engine, [('a', 1.0), ('b', 2.0)])
        self.assertFalse(pending.none_left(self.engine))
        self.assertFalse(pending.none_left(self.engine, skip={'a'}))
        self.assertTrue(pending.none_left(self.engine, skip={'a', 'b'}))

    def test_none_left_is_not_said_by_a_read_that_fails(self):
        # A database without the index's tables.
        self.assertFalse(pending.none_left(sa.create_engine('sqlite://')))

    def statements(self, engine):
        seen = []
        sa.event.listen(engine, 'before_cursor_execute',
                        lambda *args: seen.append(args[2]))
        return seen

    def sqlite_statements(self, engine):
        """What SQLite itself runs, on every connection checked out."""
        seen = []
        sa.event.listen(
            engine, 'checkout',
            lambda dbapi_connection, *args:
                dbapi_connection.set_trace_callback(seen.append))
        return seen

    def test_sqlite_mark_is_one_statement_outside_any_transaction(self):
        seen = self.sqlite_statements(self.engine)
        number = pending.mark(self.engine,
                              [('a', 1.0), ('b', 2.0), ('a', 3.0)])
        writes = [s for s in seen if not s.startswith('PRAGMA')]
        # The number, then the marks: each a statement of its own.
        self.assertEqual(2, len(writes), seen)
        self.assertEqual(sequence.SQLITE_NEXT, writes[0])
        self.assertIn('ON CONFLICT', writes[1])
        # Both marks, coalesced, in the one statement (values expanded).
        self.assertIn("('a', 1.0, 3.0, 0, %d)" % number, writes[1])
        self.assertIn("('b', 2.0, 2.0, 0, %d)" % number, writes[1])
        self.assertEqual({'a': 3.0, 'b': 2.0}, self.lasts())

    def test_sqlite_batch_recorded_in_part_then_whole_counts_once(self):
        # The holds are recorded, the marks refused: the batch is recorded
        # again whole, and each hold is one row still.
        with self.engine.begin() as conn:
            conn.exec_driver_sql(
                "CREATE TRIGGER refuse BEFORE INSERT ON "
                "nova_ext_index_pending WHEN NEW.uuid = 'b' "
                "BEGIN SELECT RAISE(ABORT, 'refused'); END")
        holds = [('a', 'h', 1), ('b', 'h', 1)]
        self.assertRaises(sqlite3.IntegrityError, pending.mark, self.engine,
                          {'a': (1.0, 1.0), 'b': (1.0, 1.0)}, holds)
        self.assertEqual({}, index_base.held(self.engine))
        self.assertEqual(holds, index_base.holds(self.engine))
        with self.engine.begin() as conn:
            conn.exec_driver_sql('DROP TRIGGER refuse')
        pending.mark(self.engine, {'a': (1.0, 1.0), 'b': (1.0, 1.0)}, holds)
        self.assertEqual(holds, index_base.holds(self.engine))
        self.assertEqual({'a': (1.0, 1.0), 'b': (1.0, 1.0)},
                         index_base.held(self.engine))
        # Likewise a release recorded twice.
        pending.mark(self.engine, {'a': (2.0, 2.0)}, (), holds[:1])
        pending.mark(self.engine, {'a': (2.0, 2.0)}, (), holds[:1])
        self.assertEqual(holds[1:], index_base.holds(self.engine))

    def test_mark_is_one_upsert_holding_the_write_lock(self):
        # More marks than one SQLite statement takes: one transaction.
        self.useFixture(fixtures.MockPatchObject(
            pending, 'AUTOCOMMIT_ROWS', 0))
        seen = self.statements(self.engine)
        pending.mark(self.engine, [('a', 1.0), ('b', 2.0), ('a', 3.0)])
        self.assertEqual(['BEGIN IMMEDIATE'], seen[:1])
        # The number, then the marks, in the transaction.
        self.assertEqual(2, len([s for s in seen if 'INSERT' in s]), seen)
        self.assertIn('nova_ext_index_sequence', seen[1])
        self.assertIn('ON CONFLICT', seen[2])
        self.assertEqual({'a': 3.0, 'b': 2.0}, self.lasts())

    def test_marks_merge_into_held_marks(self):
        pending.mark(self.engine, [('a', 10.0)])
        pending.mark(self.engine, [('a', 5.0), ('a', 7.0)])
        pending.mark(self.engine, {'a': (6.0, 12.0)})
        self.assertEqual({'a': 12.0}, self.lasts())
        self.assertEqual(95.0, pending.oldest_age(self.engine, now=100.0))

    def test_a_hold_is_a_row_its_release_deletes(self):
        pending.mark(self.engine, {'a': (1.0, 1.0)}, [('a', 'h', 1)])
        pending.mark(self.engine, {'a': (2.0, 2.0), 'b': (2.0, 2.0)},
                     [('a', 'h', 2), ('b', 'h', 2)])
        pending.mark(self.engine, {'a': (3.0, 3.0)}, (),
                     [('a', 'h', 1), ('a', 'h', 2)])
        self.assertEqual({'a': (1.0, 3.0), 'b': (2.0, 2.0)},
                         index_base.held(self.engine))
        self.assertEqual([('b', 'h', 2)], index_base.holds(self.engine))

    def test_a_hold_counts_while_its_holder_row_is_there(self):
        with self.engine.begin() as conn:
            conn.execute(sa.insert(schema.HOLDERS).values(
                holder='h', host='x', pid=1, beats=0, started_at=0.0))
        pending.mark(self.engine, {'a': (1.0, 1.0), 'b': (1.0, 1.0)},
                     [('a', 'h', 1), ('b', 'gone', 1)])
        pending.unmark(self.engine, pending.take(self.engine, 10))
        self.assertEqual({'a': (1.0, 1.0)}, index_base.held(self.engine))
        pending.mark(self.engine, {'a': (2.0, 2.0)}, (), [('a', 'h', 1)])
        pending.unmark(self.engine, pending.take(self.engine, 10))
        self.assertEqual({}, index_base.held(self.engine))

    def test_readers_do_not_take_the_write_lock(self):
        seen = self.statements(self.engine)
        pending.take(self.engine, 10)
        pending.oldest_age(self.engine)
        self.assertNotIn('BEGIN IMMEDIATE', seen)

    def test_write_transactions_hold_the_lock_from_their_begin(self):
        # Why SQLite writers lost races: a deferred transaction that read
        # first fails at its first write once another connection has
        # committed (SQLITE_BUSY_SNAPSHOT), at once, whatever busy_timeout.
        url = self.conf.conf.nova_ext_index.connection
        other = sa.create_engine(url, connect_args={'timeout': 0.1})
        self.addCleanup(other.dispose)

        def other_marks(uuid):
            with other.begin() as conn:
                conn.execute(sa.insert(schema.PENDING).values(
                    uuid=uuid, first_event_at=1.0, last_event_at=1.0,
                    attempts=0))
        with self.engine.begin() as conn:
            conn.execute(sa.select(schema.PENDING)).all()
            other_marks('x')
            e = self.assertRaises(
                sa.exc.OperationalError, conn.execute,
                sa.delete(schema.PENDING))
        self.assertTrue(sqlite.stale_snapshot(e))
        self.assertTrue(db.lost_race(e))
        # A transaction of begin_write() holds the write lock from BEGIN:
        # the other writer waits for it (here it gives up after 0.1 s),
        # and what it read stays true until it commits.
        with db.begin_write(self.engine) as conn:
            conn.execute(sa.select(schema.PENDING)).all()
            self.assertRaises(sa.exc.OperationalError, other_marks, 'y')
            conn.execute(sa.delete(schema.PENDING))
        other_marks('z')
        self.assertEqual({'z': 1.0}, self.lasts())

    def test_concurrent_marks_and_writes_never_fail(self):
        # Two engines of the index on one file (two processes, say): 2000
        # marks from four threads while another thread applies batches and
        # counts failed attempts, with no retry: not one write may fail.
        other = self.engine
        db.reset()
        mine = db.get_engine(self.conf.conf)
        self.assertIsNot(other, mine)
        self.addCleanup(other.dispose)
        self.useFixture(fixtures.MockPatchObject(
            db, 'lost_race', return_value=False))
        failures, stop = [], threading.Event()

        def marks(engine, prefix):
            for n in range(500):
                try:
                    pending.mark(engine, [('%s-%d' % (prefix, n), float(n))])
                except Exception as e:
                    failures.append(e)

        def writes():
            cell = index_base.Cell('cell-1', 1)
            n = 0
            while not stop.is_set():
                n += 1
                uuids = ['w-%d-%d' % (n, k) for k in range(20)]
                try:
                    writer.apply(other, index_base.cell_read(cell, float(n), *[
                        index_base.instance_row(u, n * 100 + k,
                                                index_base.T0, 'w')
                        for k, u in enumerate(uuids)]), uuids)
                    pending.failed(mine, pending.take(other, 50))
                except Exception as e:
                    failures.append(e)
        writer_thread = threading.Thread(target=writes)
        writer_thread.start()
        markers = [threading.Thread(target=marks, args=(engine, prefix))
                   for engine, prefix in ((mine, 'a'), (other, 'b'),
                                          (mine, 'c'), (other, 'd'))]
        for thread in markers:
            thread.start()
        for thread in markers:
            thread.join(120)
        stop.set()
        writer_thread.join(60)
        self.assertEqual([], failures)
        self.assertEqual(2000, pending.count(mine))
        with mine.connect() as conn:
            self.assertGreater(conn.execute(sa.select(
                sa.func.count()).select_from(schema.INSTANCES)).scalar(), 0)

    def test_mark_runs_again_after_a_lost_race(self):
        self.useFixture(fixtures.MockPatchObject(
            pending, 'AUTOCOMMIT_ROWS', 0))
        real, calls = upsert.merge, []

        def deadlocked_once(conn, rows):
            calls.append(rows)
            if len(calls) == 1:
                raise db_exc.DBDeadlock()
            return real(conn, rows)
        self.useFixture(fixtures.MockPatchObject(
            upsert, 'merge', side_effect=deadlocked_once))
        pending.mark(self.engine, [('a', 1.0)])
        self.assertEqual(2, upsert.merge.call_count)
        self.assertEqual({'a': 1.0}, self.lasts())

    def test_mark_gives_up_on_other_errors(self):
        self.useFixture(fixtures.MockPatchObject(
            pending, 'AUTOCOMMIT_ROWS', 0))
        self.useFixture(fixtures.MockPatchObject(
            upsert, 'merge', side_effect=db_exc.DBError('index away')))
        self.assertRaises(db_exc.DBError, pending.mark, self.engine,
                          [('a', 1.0)])
        self.assertEqual(1, upsert.merge.call_count)
