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
import time
from unittest import mock

import fixtures
from oslo_db import exception as db_exc
import sqlalchemy as sa

from nova_ext.index import db
from nova_ext.index import events
from nova_ext.index import ids
from nova_ext.index import migration
from nova_ext.index import pending
from nova_ext.index import refresh
from nova_ext.index import source
from nova_ext.index import worker
from nova_ext.index import writer
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

    def _race(self, engine, uuid):
        """Mark 'a' on ``engine`` while another process marks ``uuid``.

        The other process (an engine of its own) marks between this mark's
        read, which finds no row, and its insert.

        :returns: the types of the exceptions the attempts raised.
        """
        other = sa.create_engine(self.conf.conf.nova_ext_index.connection)
        self.addCleanup(other.dispose)
        race_on_insert(self, engine, 'nova_ext_index_pending',
                       lambda: pending.mark(other, [(uuid, 5.0)]))
        raised = record_raised(self, pending, '_mark')
        pending.mark(engine, [('a', 10.0)])
        return raised

    def test_mark_racing_a_mark_of_the_same_instance(self):
        raised = self._race(self.engine, 'a')
        # oslo.db begins SQLite transactions itself: the insert finds the
        # read's snapshot stale, and fails at once, before the duplicate
        # key (DBDuplicateEntry on other databases, see
        # test_index_backends). The retry reads again and updates the row.
        self.assertEqual([sa.exc.OperationalError], raised)
        self.assertEqual({'a': 10.0}, pending.take(self.engine, 10))
        self.assertEqual(95.0, pending.lag(self.engine, now=100.0))

    def test_mark_racing_any_write(self):
        raised = self._race(self.engine, 'b')
        self.assertEqual([sa.exc.OperationalError], raised)
        self.assertEqual({'a': 10.0, 'b': 5.0},
                         pending.take(self.engine, 10))

    def test_mark_racing_on_a_plain_engine(self):
        # pysqlite left to itself begins the transaction at the insert: the
        # duplicate key is an IntegrityError.
        engine = sa.create_engine(self.conf.conf.nova_ext_index.connection)
        self.addCleanup(engine.dispose)
        raised = self._race(engine, 'a')
        self.assertEqual([sa.exc.IntegrityError], raised)
        self.assertEqual({'a': 10.0}, pending.take(self.engine, 10))
        self.assertEqual(95.0, pending.lag(self.engine, now=100.0))

    def test_mark_gives_up_on_other_errors(self):
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
                source.CHILDREN[-1][0]))]
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
