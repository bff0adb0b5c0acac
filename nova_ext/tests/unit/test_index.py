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
"""The index's own bookkeeping, on a real SQLite index database."""

import collections
import datetime
import os
import sqlite3
import threading
import time
from unittest import mock

import fixtures
from nova.db.main import models as nova_models
from oslo_db import exception as db_exc
import oslo_messaging
import sqlalchemy as sa

from nova_ext.index import consumer
from nova_ext.index import db
from nova_ext.index import events
from nova_ext.index import ids
from nova_ext.index import listener
from nova_ext.index import migration
from nova_ext.index import pending
from nova_ext.index import refresh
from nova_ext.index import source
from nova_ext.index import sqlite
from nova_ext.index import worker
from nova_ext.index import writer
from nova_ext.notifications import base as notifications_base
from nova_ext.notifications import dispatcher
from nova_ext.tests.unit import base


class TestIds(base.TestCase):

    def test_round_trip(self):
        for source_id, cell_id in ((1, 0), (42, 3), (2 ** 40, 65535)):
            index_id = ids.index_id(source_id, cell_id)
            self.assertEqual(source_id, ids.source_id(index_id))
            self.assertEqual(cell_id, ids.cell_id(index_id))

    def test_orders_like_the_cell_ids(self):
        # Nova's default sort compares cell-local ids across cells.
        self.assertLess(ids.index_id(7, 9), ids.index_id(8, 1))
        self.assertLess(ids.index_id(7, 1), ids.index_id(7, 2))

    def test_cell_id_must_fit(self):
        self.assertRaises(ValueError, ids.index_id, 1, 65536)
        self.assertRaises(ValueError, ids.index_id, 1, -1)


class TestEvents(base.TestCase):

    PAYLOAD = {'nova_object.name': 'InstanceActionPayload',
               'nova_object.data': {'uuid': 'u-1'}}

    def test_change(self):
        utc = datetime.timezone.utc
        when = datetime.datetime(2026, 11, 22, 15, 30, 10, 500000, utc)
        self.assertEqual(
            ('u-1', when.timestamp()),
            events.change('instance.update', self.PAYLOAD,
                          '2026-11-22 15:30:10.500000'))

    def test_not_an_instance_change(self):
        self.assertIsNone(events.change('service.update', self.PAYLOAD,
                                        '2026-11-22 15:30:10'))
        self.assertIsNone(events.change('instance.update', {'x': 1},
                                        '2026-11-22 15:30:10'))
        self.assertIsNone(events.change('instance.update', 'text',
                                        '2026-11-22 15:30:10'))

    def test_unreadable_time_is_now(self):
        self.assertEqual(123.0, events.event_time('yesterday', default=123.0))


class IndexDBTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        self.flags(connection='sqlite:///%s' % os.path.join(tmp, 'i.sqlite'),
                   group='nova_ext_index')
        db.reset()
        self.addCleanup(db.reset)
        migration.db_sync(self.conf.conf)
        self.engine = db.get_engine(self.conf.conf)


class TestMigration(IndexDBTestCase):

    def test_at_head_and_idempotent(self):
        self.assertEqual(migration.head(), migration.current(self.conf.conf))
        migration.db_sync(self.conf.conf)
        self.assertEqual(migration.head(), migration.current(self.conf.conf))

    def test_has_every_column_of_novas_tables(self):
        inspector = sa.inspect(self.engine)
        for table in [source.INSTANCES, source.SG_ASSOCIATIONS,
                      source.SECURITY_GROUPS] + [
                          t for t, _key in source.CHILDREN]:
            have = {c['name'] for c in inspector.get_columns(table.name)}
            self.assertEqual(set(table.c.keys()), have, table.name)


class TestNameSortIndexes(IndexDBTestCase):
    """A page sorted by name is read off an index, not sorted whole.

    The ORDER BY is Nova's for ``sort_key=display_name`` (see
    ``nova.db.utils.process_sort_params``: created_at and id follow, in
    the first key's direction).
    """

    def _plan(self, where, direction):
        order = ', '.join('%s %s' % (key, direction)
                          for key in ('display_name', 'created_at', 'id'))
        with self.engine.connect() as conn:
            rows = conn.exec_driver_sql(
                'EXPLAIN QUERY PLAN SELECT id FROM instances WHERE %s '
                'ORDER BY %s LIMIT 1000' % (where, order)).all()
        return ' / '.join(row[-1] for row in rows)

    def test_admin_and_project_pages_need_no_sort(self):
        for where in ("deleted = 0",
                      "project_id = 'p' AND deleted = 0"):
            for direction in ('asc', 'desc'):
                plan = self._plan(where, direction)
                self.assertNotIn('TEMP B-TREE', plan, (where, direction))
                self.assertIn('_name_idx', plan, (where, direction))


class TestBlockDeviceMappingMigration(base.TestCase):
    """0003 has an index made before it read every instance again."""

    def test_indexed_instances_marked_as_of_the_epoch(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        self.flags(connection='sqlite:///%s' % os.path.join(tmp, 'i.sqlite'),
                   group='nova_ext_index')
        db.reset()
        self.addCleanup(db.reset)
        migration.db_sync(self.conf.conf, revision='0002')
        engine = db.get_engine(self.conf.conf)
        with engine.begin() as conn:
            conn.execute(sa.insert(writer.BOOK), [
                {'uuid': u, 'cell_uuid': 'c1', 'source_id': n,
                 'read_at': 10.0} for n, u in enumerate(('a', 'b'), 1)])
        self.assertEqual(0.0, pending.lag(engine, now=100.0))
        migration.db_sync(self.conf.conf)
        self.assertEqual({'a': 0.0, 'b': 0.0}, pending.take(engine, 10))
        self.assertEqual(100.0, pending.lag(engine, now=100.0))


def held(engine):
    """``{uuid: (first, last, holds, releases, held_at)}`` of every mark."""
    c = pending.PENDING.c
    with engine.connect() as conn:
        return {r[0]: tuple(r[1:]) for r in conn.execute(sa.select(
            c.uuid, c.first_event_at, c.last_event_at, c.holds, c.releases,
            c.held_at))}


class TestPending(IndexDBTestCase):

    def test_mark_keeps_first_and_last(self):
        pending.mark(self.engine, [('a', 10.0), ('a', 5.0), ('b', 7.0)])
        pending.mark(self.engine, [('a', 20.0)])
        self.assertEqual({'a': 20.0, 'b': 7.0},
                         pending.take(self.engine, 10))
        self.assertEqual(95.0, pending.lag(self.engine, now=100.0))

    def test_unmark_keeps_renewed_marks(self):
        pending.mark(self.engine, [('a', 10.0), ('b', 10.0)])
        taken = pending.take(self.engine, 10)
        pending.mark(self.engine, [('a', 11.0)])
        pending.unmark(self.engine, taken)
        self.assertEqual({'a': 11.0}, pending.take(self.engine, 10))
        self.assertEqual(1, pending.count(self.engine))

    def test_no_lag_when_nothing_pending(self):
        self.assertEqual(0.0, pending.lag(self.engine))

    def test_take_oldest_first(self):
        pending.mark(self.engine, [('new', 30.0), ('old', 1.0),
                                   ('mid', 2.0)])
        self.assertEqual(['old', 'mid'],
                         list(pending.take(self.engine, 2)))

    def test_take_passes_over_skipped_marks(self):
        pending.mark(self.engine, [('new', 30.0), ('old', 1.0),
                                   ('mid', 2.0)])
        self.assertEqual({'mid': 2.0, 'new': 30.0},
                         pending.take(self.engine, 2, skip={'old'}))
        self.assertEqual(['new'], list(pending.take(
            self.engine, 2, skip=['old', 'mid', 'gone'])))
        self.assertEqual({}, pending.take(self.engine, 2,
                                          skip={'old', 'mid', 'new'}))

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
        pending.mark(self.engine, [('a', 1.0), ('b', 2.0), ('a', 3.0)])
        writes = [s for s in seen if not s.startswith('PRAGMA')]
        self.assertEqual(1, len(writes), seen)
        self.assertIn('ON CONFLICT', writes[0])
        # Both marks, coalesced, in the one statement (values expanded).
        self.assertIn("('a', 1.0, 3.0, ", writes[0])
        self.assertIn("('b', 2.0, 2.0, ", writes[0])
        self.assertEqual({'a': 3.0, 'b': 2.0}, pending.take(self.engine, 10))

    def test_sqlite_batch_is_recorded_whole_or_not_at_all(self):
        # Were a batch recorded in part and then again whole, its holds and
        # releases would count twice.
        with self.engine.begin() as conn:
            conn.exec_driver_sql(
                "CREATE TRIGGER refuse BEFORE INSERT ON "
                "nova_ext_index_pending WHEN NEW.uuid = 'b' "
                "BEGIN SELECT RAISE(ABORT, 'refused'); END")
        self.assertRaises(sqlite3.IntegrityError, pending.mark, self.engine,
                          {'a': (1.0, 1.0), 'b': (1.0, 1.0)},
                          {'a': (0, 1), 'b': (0, 1)})
        self.assertEqual({}, held(self.engine))

    def test_mark_is_one_upsert_holding_the_write_lock(self):
        # More marks than one SQLite statement takes: one transaction.
        self.useFixture(fixtures.MockPatchObject(
            pending, 'AUTOCOMMIT_ROWS', 0))
        seen = self.statements(self.engine)
        pending.mark(self.engine, [('a', 1.0), ('b', 2.0), ('a', 3.0)])
        self.assertEqual(['BEGIN IMMEDIATE'], seen[:1])
        self.assertEqual(1, len([s for s in seen if 'INSERT' in s]), seen)
        self.assertIn('ON CONFLICT', seen[1])
        self.assertEqual({'a': 3.0, 'b': 2.0}, pending.take(self.engine, 10))

    def test_marks_merge_into_held_marks(self):
        pending.mark(self.engine, [('a', 10.0)])
        pending.mark(self.engine, [('a', 5.0), ('a', 7.0)])
        pending.mark(self.engine, {'a': (6.0, 12.0)})
        self.assertEqual({'a': 12.0}, pending.take(self.engine, 10))
        self.assertEqual(95.0, pending.lag(self.engine, now=100.0))

    def test_holds_add_up_in_one_row_and_in_many(self):
        pending.mark(self.engine, {'a': (1.0, 1.0)}, {'a': (1, 0)})
        pending.mark(self.engine, {'a': (2.0, 2.0), 'b': (2.0, 2.0)},
                     {'a': (1, 0), 'b': (1, 0)})
        pending.mark(self.engine, {'a': (3.0, 3.0)}, {'a': (0, 2)})
        self.assertEqual({'a': (1.0, 3.0, 2, 2, 2.0),
                          'b': (2.0, 2.0, 1, 0, 2.0)}, held(self.engine))

    def test_an_upsert_is_compiled_once(self):
        pending.mark(self.engine, [('a', 1.0)])
        upsert = pending._upsert(self.engine.dialect.name)
        with mock.patch.object(upsert, 'compile',
                               side_effect=AssertionError('compiled again')):
            pending.mark(self.engine, [('a', 2.0)])
            pending.mark(self.engine, [('b', 3.0), ('c', 4.0)])
        self.assertEqual({'a': 2.0, 'b': 3.0, 'c': 4.0},
                         pending.take(self.engine, 10))

    def test_readers_do_not_take_the_write_lock(self):
        seen = self.statements(self.engine)
        pending.take(self.engine, 10)
        pending.lag(self.engine)
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
                conn.execute(sa.insert(pending.PENDING).values(
                    uuid=uuid, first_event_at=1.0, last_event_at=1.0,
                    attempts=0))
        with self.engine.begin() as conn:
            conn.execute(sa.select(pending.PENDING)).all()
            other_marks('x')
            e = self.assertRaises(
                sa.exc.OperationalError, conn.execute,
                sa.delete(pending.PENDING))
        self.assertTrue(sqlite.stale_snapshot(e))
        self.assertTrue(db.lost_race(e))
        # A transaction of begin_write() holds the write lock from BEGIN:
        # the other writer waits for it (here it gives up after 0.1 s),
        # and what it read stays true until it commits.
        with db.begin_write(self.engine) as conn:
            conn.execute(sa.select(pending.PENDING)).all()
            self.assertRaises(sa.exc.OperationalError, other_marks, 'y')
            conn.execute(sa.delete(pending.PENDING))
        other_marks('z')
        self.assertEqual({'z': 1.0}, pending.take(self.engine, 10))

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
            cell = _Cell('cell-1', 1)
            n = 0
            while not stop.is_set():
                n += 1
                uuids = ['w-%d-%d' % (n, k) for k in range(20)]
                try:
                    writer.apply(other, _read(cell, float(n), *[
                        _row(u, n * 100 + k, T0, 'w')
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
                sa.func.count()).select_from(writer.BOOK)).scalar(), 0)

    def test_mark_without_an_upsert(self):
        self.useFixture(fixtures.MockPatchObject(
            pending, 'AUTOCOMMIT_ROWS', 0))
        # A backend with neither upsert reads, then inserts or updates.
        self.useFixture(fixtures.MockPatchObject(pending, '_upsert',
                                                 return_value=None))
        pending.mark(self.engine, [('a', 10.0), ('b', 7.0)])
        pending.mark(self.engine, [('a', 20.0), ('a', 5.0), ('c', 30.0)])
        self.assertEqual({'a': 20.0, 'b': 7.0, 'c': 30.0},
                         pending.take(self.engine, 10))
        self.assertEqual(95.0, pending.lag(self.engine, now=100.0))

    def test_mark_runs_again_after_a_lost_race(self):
        self.useFixture(fixtures.MockPatchObject(
            pending, 'AUTOCOMMIT_ROWS', 0))
        real, calls = pending._mark, []

        def deadlocked_once(conn, rows):
            calls.append(rows)
            if len(calls) == 1:
                raise db_exc.DBDeadlock()
            return real(conn, rows)
        self.useFixture(fixtures.MockPatchObject(
            pending, '_mark', side_effect=deadlocked_once))
        pending.mark(self.engine, [('a', 1.0)])
        self.assertEqual(2, pending._mark.call_count)
        self.assertEqual({'a': 1.0}, pending.take(self.engine, 10))

    def test_mark_gives_up_on_other_errors(self):
        self.useFixture(fixtures.MockPatchObject(
            pending, 'AUTOCOMMIT_ROWS', 0))
        self.useFixture(fixtures.MockPatchObject(
            pending, '_mark', side_effect=db_exc.DBError('index away')))
        self.assertRaises(db_exc.DBError, pending.mark, self.engine,
                          [('a', 1.0)])
        self.assertEqual(1, pending._mark.call_count)


def race_on_insert(test, engine, table, other_writer):
    """Run ``other_writer`` once, just before ``engine`` inserts in ``table``.

    At that point the transaction may have read, but has not yet written,
    so the other writer does not wait for it: it commits, and the insert
    then finds the transaction's reads out of date.
    """
    raced = []

    def race(conn, cursor, statement, parameters, context, executemany):
        if not raced and statement.startswith('INSERT INTO %s ' % table):
            raced.append(statement)
            other_writer()
    sa.event.listen(engine, 'before_cursor_execute', race)
    test.addCleanup(sa.event.remove, engine, 'before_cursor_execute', race)


def record_raised(test, module, function):
    """A list of the types of what ``module.function`` raises, kept up."""
    raised = []
    real = getattr(module, function)

    def recording(*args, **kwargs):
        try:
            return real(*args, **kwargs)
        except Exception as e:
            raised.append(type(e))
            raise
    test.useFixture(fixtures.MockPatchObject(module, function,
                                             side_effect=recording))
    return raised


class FailingCellTestCase(IndexDBTestCase):
    """The marks of ``down-*`` fail (their cell is down), the others apply."""

    def setUp(self):
        super().setUp()
        self.tried = collections.Counter()
        self.useFixture(fixtures.MockPatchObject(
            refresh, 'refresh', side_effect=self._refresh))

    def _refresh(self, ctx, conf, uuids):
        self.tried.update(list(uuids))
        return refresh._empty(), sorted(u for u in uuids
                                        if u.startswith('down'))


class TestProcessPending(FailingCellTestCase):

    def test_counts_applied_marks_only(self):
        pending.mark(self.engine, [('down-1', 1.0), ('up-1', 2.0)])
        ctx = mock.sentinel.ctx
        skip = set()
        self.assertEqual(1, refresh.process_pending(ctx, self.conf.conf,
                                                    skip=skip))
        self.assertEqual({'down-1'}, skip)
        # Everything left has failed: skipped, nothing is taken.
        self.assertEqual(0, refresh.process_pending(ctx, self.conf.conf,
                                                    skip=skip))
        self.assertEqual({'down-1': 1, 'up-1': 1}, self.tried)
        # Taken again without skip, it fails again: nothing applied.
        self.assertEqual(0, refresh.process_pending(ctx, self.conf.conf))
        self.assertEqual({'down-1': 1.0}, pending.take(self.engine, 10))
        with self.engine.connect() as conn:
            self.assertEqual(2, conn.execute(
                sa.select(pending.PENDING.c.attempts)).scalar())

    def test_a_held_mark_is_applied_once_per_pass(self):
        # A Nova transaction still under way holds up-1's mark.
        now = time.time()
        pending.mark(self.engine, [('up-1', now)], {'up-1': (1, 0)})
        ctx = mock.sentinel.ctx
        done = set()
        self.assertEqual(1, refresh.process_pending(ctx, self.conf.conf,
                                                    done=done))
        self.assertEqual({'up-1'}, done)
        self.assertEqual(0, refresh.process_pending(ctx, self.conf.conf,
                                                    done=done))
        self.assertEqual({'up-1': 1}, self.tried)
        self.assertEqual({'up-1': now}, pending.take(self.engine, 10))

    def test_a_lost_race_is_written_again(self):
        # Not a failure of the cell: its marks need not wait for a retry.
        write = mock.Mock(side_effect=[db_exc.DBDuplicateEntry(), 'done'])
        self.assertEqual('done', refresh._again_if_raced(write, 'e', 'x'))
        self.assertEqual([mock.call('e', 'x')] * 2, write.call_args_list)
        write = mock.Mock(side_effect=db_exc.DBError('index away'))
        self.assertRaises(db_exc.DBError, refresh._again_if_raced, write,
                          'e', 'x')
        self.assertEqual(1, write.call_count)


class TestWorker(FailingCellTestCase):

    def worker(self, retry):
        running = worker.Worker(self.conf.conf, retry=retry)
        self.addCleanup(running.stop)
        return running

    def test_failing_marks_wait_for_the_retry(self):
        pending.mark(self.engine, [('down-1', 1.0)])
        running = self.worker(retry=0.2)
        running.wake()
        time.sleep(1.0)
        running.stop()
        # Tried at once, then every 0.2 s, not over and over.
        self.assertLessEqual(self.tried['down-1'], 8)
        self.assertGreaterEqual(self.tried['down-1'], 2)
        self.assertEqual(0, running.applied)
        self.assertEqual(1, pending.count(self.engine))

    def test_other_cells_go_on_while_one_is_down(self):
        # The failing marks are the oldest, and fill more than a batch.
        self.flags(batch_size=2, group='nova_ext_index')
        pending.mark(self.engine, [('down-%d' % i, float(i))
                                   for i in range(5)] + [('up-1', 10.0)])
        running = self.worker(retry=60)
        running.wake()
        self.assertTrue(running.wait_idle(10))
        self.assertEqual(5, pending.count(self.engine))
        self.assertEqual(1, running.applied)
        self.assertEqual(dict.fromkeys(['down-%d' % i for i in range(5)] +
                                       ['up-1'], 1), self.tried)
        # Until the retry, a change of another cell is applied at once,
        # and the failing marks are passed over.
        pending.mark(self.engine, [('up-2', 20.0), ('down-0', 21.0)])
        running.wake()
        self.assertTrue(running.wait_idle(10))
        self.assertEqual(2, running.applied)
        self.assertEqual(5, pending.count(self.engine))
        self.assertEqual(1, self.tried['up-2'])
        self.assertEqual(1, self.tried['down-0'])


class MarkerTestCase(IndexDBTestCase):

    def setUp(self):
        super().setUp()
        # Batches are recorded by calls to pending.mark, kept up.
        self.batches = []
        real = self.real_mark = pending.mark

        def recording(engine, changes, holds=None, timeout=None):
            self.batches.append(dict(changes))
            return real(engine, changes, holds, timeout=timeout)
        self.useFixture(fixtures.MockPatchObject(pending, 'mark',
                                                 side_effect=recording))
        self.useFixture(fixtures.MockPatchObject(consumer, 'BACKOFF', 0.01))

    def marker(self, size=100, delay=10.0):
        running = consumer.Marker(self.conf.conf, size=size, delay=delay)
        self.addCleanup(running.stop)
        return running

    def marked(self):
        with self.engine.connect() as conn:
            return {r.uuid: (r.first_event_at, r.last_event_at)
                    for r in conn.execute(sa.select(pending.PENDING))}


class TestMarker(MarkerTestCase):

    def test_batches_of_size(self):
        marker = self.marker(size=100)
        for n in range(250):
            marker.add('u-%d' % n, float(n))
        self.assertTrue(marker.flush(10))
        self.assertEqual(250, len(self.marked()))
        # One transaction per 100 or so, and one for the rest.
        self.assertLessEqual(len(self.batches), 3)
        self.assertEqual(250, sum(len(b) for b in self.batches))
        self.assertEqual(250, marker.marked)

    def test_changes_of_an_instance_make_one_mark(self):
        marker = self.marker()
        for when in (5.0, 1.0, 9.0):
            marker.add('a', when)
        self.assertTrue(marker.flush(10))
        self.assertEqual([{'a': (1.0, 9.0)}], self.batches)
        self.assertEqual({'a': (1.0, 9.0)}, self.marked())

    def test_a_lone_change_waits_for_the_delay_only(self):
        marker = self.marker(delay=0.05)
        started = time.monotonic()
        marker.add('a', 1.0)
        while not self.marked():
            self.assertLess(time.monotonic() - started, 10)
            time.sleep(0.005)
        self.assertGreaterEqual(time.monotonic() - started, 0.04)

    def test_a_waiter_does_not_wait_for_the_delay(self):
        marker = self.marker(delay=60)
        marker.add('a', 1.0)
        self.assertTrue(marker.wait(marker.add('b', 1.0), 10))
        self.assertEqual([{'a': (1.0, 1.0), 'b': (1.0, 1.0)}], self.batches)

    def test_a_mark_failing_twice_loses_nothing(self):
        real, calls = self.real_mark, []

        def fails_twice(engine, changes, holds=None, timeout=None):
            calls.append(dict(changes))
            if len(calls) <= 2:
                raise db_exc.DBError('index away')
            return real(engine, changes, holds, timeout=timeout)
        pending.mark.side_effect = fails_twice
        marker = self.marker(delay=0.001)
        ticket = marker.add('a', 1.0)
        # While it fails, a consumer does not wait for it.
        deadline = time.monotonic() + 10
        while not marker.failures and time.monotonic() < deadline:
            time.sleep(0.001)
        self.assertFalse(marker.wait(ticket, 10))
        marker.add('b', 2.0)
        marker.add('a', 3.0)
        self.assertTrue(marker.flush(10))
        self.assertEqual({'a': (1.0, 3.0), 'b': (2.0, 2.0)}, self.marked())
        self.assertEqual(2, marker.failures)
        self.assertEqual({'a': (1.0, 1.0)}, calls[0])
        self.assertTrue(marker.wait(ticket, 0))

    def test_stop_records_what_is_buffered(self):
        marker = self.marker(delay=60)
        marker.add('a', 1.0)
        marker.stop()
        self.assertEqual({'a': (1.0, 1.0)}, self.marked())


def _notification(uuid, event_type='instance.update'):
    return notifications_base.Notification(
        event_type=event_type, publisher_id='nova-compute:h1',
        priority='INFO', timestamp='2026-11-22 10:00:00.000000',
        message_id='m-%s' % uuid, context={},
        payload={'nova_object.name': 'InstanceUpdatePayload',
                 'nova_object.data': {'uuid': uuid}})


class TestIndexConsumer(MarkerTestCase):

    def setUp(self):
        super().setUp()
        self.flags(notification_batch_timeout=10.0, group='nova_ext_index')
        # As loaded: the consumer runs where it is configured.
        self.flags(consumers=['index'], group='nova_ext_notifications')
        self.addCleanup(dispatcher.reset)
        dispatcher.reset()
        self.worker = mock.Mock()
        self.useFixture(fixtures.MockPatchObject(
            consumer, 'get_worker', return_value=self.worker))
        # Before the worker is unpatched: stopping, the marker wakes it.
        self.addCleanup(consumer.reset)

    def test_commits_when_nothing_follows(self):
        consumer.IndexConsumer(self.conf.conf).consume(_notification('a'))
        self.assertEqual(['a'], list(self.marked()))
        self.worker.wake.assert_called_once_with()

    def test_goes_on_when_notifications_follow(self):
        self.useFixture(fixtures.MockPatchObject(
            consumer, '_more_queued', return_value=True))
        index = consumer.IndexConsumer(self.conf.conf)
        index.consume(_notification('a'))
        index.consume(_notification('b'))
        index.consume(_notification('x', event_type='service.update'))
        self.assertEqual({}, self.marked())
        self.assertTrue(consumer.get_marker(self.conf.conf).flush(10))
        self.assertEqual([{'a': mock.ANY, 'b': mock.ANY}], self.batches)

    def test_never_raises_when_marks_fail(self):
        pending.mark.side_effect = db_exc.DBError('index away')
        consumer.IndexConsumer(self.conf.conf).consume(_notification('a'))
        self.assertEqual(1, consumer.get_marker(self.conf.conf).buffered)

    def test_a_marker_without_its_thread_is_replaced(self):
        # As in a forked child, which inherits the object, not the thread.
        first = consumer.get_marker(self.conf.conf)
        first.stop()
        self.assertIsNot(first, consumer.get_marker(self.conf.conf))

    def test_drained_dispatcher_has_recorded_every_change(self):
        self.flags(consumers=['index'], group='nova_ext_notifications')
        d = dispatcher.get_dispatcher(self.conf.conf)
        for n in range(300):
            d.submit(_notification('u-%d' % n))
        self.assertTrue(d.drain(30))
        self.assertEqual(300, len(self.marked()))
        self.assertEqual(0, d.counts['failed'])
        # Batched: far fewer transactions than notifications.
        self.assertLess(len(self.batches), 100)


def _message(uuid, event_type='instance.update'):
    return {'ctxt': {}, 'publisher_id': 'nova-compute:h1',
            'event_type': event_type,
            'payload': {'nova_object.data': {'uuid': uuid}},
            'metadata': {'timestamp': '2026-11-22 10:00:00.000000'}}


class TestListenerEndpoint(IndexDBTestCase):

    def setUp(self):
        super().setUp()
        self.sleep = self.useFixture(fixtures.MockPatchObject(
            listener.time, 'sleep')).mock
        self.wake = mock.Mock()
        self.endpoint = listener.Endpoint(self.conf.conf, wake=self.wake)

    def test_a_batch_is_one_transaction(self):
        mark = self.useFixture(fixtures.MockPatchObject(
            pending, 'mark', side_effect=pending.mark)).mock
        result = self.endpoint.info([_message('a'), _message('b'),
                                     _message('a')])
        self.assertEqual(oslo_messaging.NotificationResult.HANDLED, result)
        self.assertEqual(1, mark.call_count)
        self.assertEqual({'a', 'b'}, set(pending.take(self.engine, 10)))
        self.assertEqual(3, self.endpoint.marked)
        self.wake.assert_called_once_with()

    def test_nothing_to_record(self):
        result = self.endpoint.info([_message('a', 'service.update')])
        self.assertEqual(oslo_messaging.NotificationResult.HANDLED, result)
        self.assertEqual(0, pending.count(self.engine))
        self.wake.assert_not_called()

    def test_failed_batch_is_requeued_after_a_pause(self):
        self.useFixture(fixtures.MockPatchObject(
            pending, 'mark', side_effect=db_exc.DBError('index away')))
        batch = [_message('a'), _message('b')]
        for _ in range(7):
            self.assertEqual(oslo_messaging.NotificationResult.REQUEUE,
                             self.endpoint.error(batch))
        self.assertEqual(14, self.endpoint.requeued)
        pauses = [c.args[0] for c in self.sleep.call_args_list]
        self.assertEqual([0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0], pauses)
        pending.mark.side_effect = None
        self.assertEqual(oslo_messaging.NotificationResult.HANDLED,
                         self.endpoint.error(batch))
        # Back to the shortest pause for the next failure.
        pending.mark.side_effect = db_exc.DBError('index away')
        self.endpoint.info(batch)
        self.assertEqual(0.1, self.sleep.call_args.args[0])


class _Cell(object):
    def __init__(self, uuid, id):
        self.uuid, self.id = uuid, id


T0 = datetime.datetime(2026, 11, 22, 12, 0, 0)


def _row(uuid, source_id, updated_at, name, hidden=False, deleted=False):
    return {'id': source_id, 'uuid': uuid, 'updated_at': updated_at,
            'created_at': T0, 'deleted_at': T0 if deleted else None,
            'deleted': source_id if deleted else 0, 'hidden': hidden,
            'display_name': name}


def _read(cell, read_at, *rows, tags=None):
    read = source.CellRead(cell, read_at)
    for row in rows:
        read.instances[row['uuid']] = row
    read.children['tags'] = tags or {}
    return read


class TestWriter(IndexDBTestCase):

    CELL1 = _Cell('cell-1', 3)
    CELL2 = _Cell('cell-2', 4)

    def held(self):
        with self.engine.connect() as conn:
            return {r.uuid: (r.id, r.display_name, r.deleted) for r in
                    conn.execute(sa.select(source.INSTANCES))}

    def test_write_then_newer_then_older(self):
        u = 'u-1'
        t1 = T0 + datetime.timedelta(seconds=1)
        out = writer.apply(self.engine, _read(self.CELL1, 100.0,
                                              _row(u, 7, t1, 'new')), [u])
        self.assertEqual([u], out.written)
        self.assertEqual({u: (ids.index_id(7, 3), 'new', 0)}, self.held())
        # An older state read later (clock skew) does not win...
        out = writer.apply(self.engine, _read(self.CELL1, 200.0,
                                              _row(u, 7, T0, 'old')), [u])
        self.assertEqual([u], out.stale)
        # ...nor the same state read earlier (a slow duplicate).
        out = writer.apply(self.engine, _read(self.CELL1, 50.0,
                                              _row(u, 7, t1, 'dup')), [u])
        self.assertEqual([u], out.stale)
        self.assertEqual('new', self.held()[u][1])
        # A repeat of the same read is applied again (idempotent).
        out = writer.apply(self.engine, _read(self.CELL1, 100.0,
                                              _row(u, 7, t1, 'new')), [u])
        self.assertEqual([u], out.written)

    def test_deleted_row_keeps_nova_marker(self):
        u = 'u-2'
        writer.apply(self.engine, _read(self.CELL1, 1.0, _row(
            u, 9, T0, 'gone', deleted=True)), [u])
        index_id, _name, deleted = self.held()[u]
        self.assertEqual(index_id, deleted)

    def test_related_rows_replaced(self):
        u = 'u-3'
        writer.apply(self.engine, _read(self.CELL1, 1.0, _row(u, 1, T0, 'a'),
                                        tags={u: [{'resource_id': u,
                                                   'tag': 'x'}]}), [u])
        writer.apply(self.engine, _read(self.CELL1, 2.0, _row(u, 1, T0, 'a'),
                                        tags={u: [{'resource_id': u,
                                                   'tag': 'y'}]}), [u])
        with self.engine.connect() as conn:
            tags = [r.tag for r in conn.execute(sa.select(
                nova_models.Tag.__table__))]
        self.assertEqual(['y'], tags)

    def test_hidden_copy_never_hides_the_visible_one(self):
        u = 'u-4'
        writer.apply(self.engine, _read(self.CELL2, 1.0,
                                        _row(u, 5, T0, 'moved')), [u])
        out = writer.apply(self.engine, _read(self.CELL1, 2.0, _row(
            u, 8, T0, 'left behind', hidden=True)), [u])
        self.assertEqual([u], out.hidden)
        self.assertEqual('moved', self.held()[u][1])

    def test_gone_from_its_cell_leaves_the_index(self):
        u = 'u-5'
        writer.apply(self.engine, _read(self.CELL1, 1.0,
                                        _row(u, 2, T0, 'x')), [u])
        out = writer.apply(self.engine, _read(self.CELL2, 2.0), [u])
        self.assertEqual([u], out.missing)
        out = writer.apply(self.engine, _read(self.CELL1, 2.0), [u])
        self.assertEqual([u], out.removed)
        self.assertEqual({}, self.held())
