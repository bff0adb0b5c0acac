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
"""Applying pending marks, with one cell down; passes over the cells."""

import time
from unittest import mock

import fixtures
from nova import context as nova_context
from nova import objects
from oslo_db import exception as db_exc
import sqlalchemy as sa

from nova_ext.index.apply import cell_probe
from nova_ext.index.apply import refresh
from nova_ext.index import db
from nova_ext.index.marks import pending
from nova_ext.index import schema
from nova_ext.seams.internals import cells as nova_cells
from nova_ext.tests.unit import base
from nova_ext.tests.unit.index import base as index_base


class TestProcessPending(index_base.FailingCellTestCase):

    def test_counts_applied_marks_only(self):
        number = pending.mark(self.engine, [('down-1', 1.0), ('up-1', 2.0)])
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
        self.assertEqual({'down-1': number}, pending.take(self.engine, 10))
        with self.engine.connect() as conn:
            self.assertEqual(2, conn.execute(
                sa.select(schema.PENDING.c.attempts)).scalar())

    def test_a_held_mark_is_applied_once_per_pass(self):
        # A Nova transaction still under way holds up-1's mark.
        now = time.time()
        with self.engine.begin() as conn:
            conn.execute(sa.insert(schema.HOLDERS).values(
                holder='h', host='x', pid=1, beats=0, started_at=now))
        number = pending.mark(self.engine, [('up-1', now)],
                              [('up-1', 'h', 1)])
        ctx = mock.sentinel.ctx
        done = set()
        self.assertEqual(1, refresh.process_pending(ctx, self.conf.conf,
                                                    done=done))
        self.assertEqual({'up-1'}, done)
        self.assertEqual(0, refresh.process_pending(ctx, self.conf.conf,
                                                    done=done))
        self.assertEqual({'up-1': 1}, self.tried)
        self.assertEqual({'up-1': number}, pending.take(self.engine, 10))

    def test_a_lost_race_is_written_again(self):
        # Not a failure of the cell: its marks need not wait for a retry.
        # The index's writes go through db.write, which runs them again.
        write = mock.Mock(side_effect=[db_exc.DBDuplicateEntry(), 'done'])
        self.assertEqual('done', db.write(self.engine, write))
        self.assertEqual(2, write.call_count)
        write = mock.Mock(side_effect=db_exc.DBError('index away'))
        self.assertRaises(db_exc.DBError, db.write, self.engine, write)
        self.assertEqual(1, write.call_count)


class Cell(object):

    def __init__(self, uuid):
        self.uuid = uuid


class TestPassOverCells(base.TestCase):
    """The pass that reads changed cells and checks the others."""

    def setUp(self):
        super().setUp()
        self.cells = [Cell('c1'), Cell('c2'), Cell('c3')]
        self.useFixture(fixtures.MockPatchObject(
            nova_cells, 'all_cells', side_effect=lambda: list(self.cells)))
        self.queried = self.useFixture(fixtures.MockPatchObject(
            objects.CellMappingList, 'get_all',
            return_value=self.cells + [Cell('new')])).mock
        self.scatter = self.useFixture(fixtures.MockPatchObject(
            nova_context, 'scatter_gather_cells',
            side_effect=self._scatter)).mock
        self.asked = []
        self.useFixture(fixtures.MockPatchObject(
            cell_probe, 'ask', side_effect=self._answers))
        self.before = self.useFixture(fixtures.MockPatchObject(
            cell_probe, 'before_reads')).mock

    def _scatter(self, ctx, cells, timeout, fn):
        results = {}
        for cell in cells:
            try:
                results[cell.uuid] = fn(mock.Mock(cell_uuid=cell.uuid))
            except Exception as e:
                results[cell.uuid] = e
        return results

    def _answers(self, cctxt, cell):
        self.assertEqual(cctxt.cell_uuid, cell.uuid)
        self.asked.append(cell.uuid)
        if cell.uuid == 'c3':
            raise db_exc.DBError('c3 is down')

    def read(self, cctxt, cell, uuids):
        return ('read', cell.uuid, tuple(uuids))

    def test_every_cell_once(self):
        self.flags(query_timeout=2.5, group='nova_ext_index')
        answered = {}
        results = refresh._every_cell('ctx', self.conf.conf, {'c1': ['u1']},
                                      self.read, answered)
        self.assertEqual(('read', 'c1', ('u1',)), results['c1'])
        self.assertEqual(['c2', 'c3'], self.asked)
        self.assertEqual({'c1': True, 'c2': True, 'c3': False}, answered)
        # A cell read is asked first only where Nova has not connected.
        self.assertEqual(['c1'], [c.uuid for _ctx, c in
                                  (call.args for call in
                                   self.before.call_args_list)])
        # The time the request's check gives a cell; Nova's process cache
        # of the cells, no query.
        self.assertEqual(2.5, self.scatter.call_args[0][2])
        self.queried.assert_not_called()

    def test_a_cell_mapped_since_is_looked_up(self):
        answered = {}
        results = refresh._every_cell('ctx', self.conf.conf, {'new': ['u1']},
                                      self.read, answered)
        self.assertEqual(('read', 'new', ('u1',)), results['new'])
        self.assertEqual({'c1', 'c2', 'c3', 'new'}, set(answered))
        self.queried.assert_called_once_with('ctx')

    def test_each_cell_reads_only(self):
        results = refresh._each_cell('ctx', {'c2': ['u2']}, self.read)
        self.assertEqual({'c2': ('read', 'c2', ('u2',))}, results)
        self.assertEqual([], self.asked)
        self.assertEqual(nova_context.CELL_TIMEOUT,
                         self.scatter.call_args[0][2])
        self.queried.assert_not_called()
