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
"""The check of one cell, on real SQLite cell databases."""

import gc
import os
import sqlite3
import threading
import time
import types

import fixtures
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade

from nova_ext import conf as ext_conf
from nova_ext import direct_reads
from nova_ext.instance_list import cellhealth
from nova_ext.tests.unit import base

CONF = ext_conf.CONF


class TestProbe(base.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.addCleanup(direct_reads.dispose)

    def cell(self, **databases):
        """A cell context, as ``target_cell`` makes: its context manager."""
        manager = enginefacade.transaction_context()
        manager.configure(max_retries=0, **databases)
        # Both engines: a cell with a replica reads through its own.
        self.addCleanup(lambda: manager.writer.get_engine().dispose())
        self.addCleanup(lambda: manager.reader.get_engine().dispose())
        mapping = types.SimpleNamespace(
            database_connection=databases['connection'])
        return types.SimpleNamespace(db_connection=manager,
                                     cell_mapping=mapping)

    def url(self, name):
        return 'sqlite:///%s' % os.path.join(self.tmp, name)

    def test_a_cell_that_answers(self):
        cctxt = self.cell(connection=self.url('cell.db'))
        # Raises for a cell that does not answer.
        cellhealth.CellHealth()._probe(cctxt, cctxt.cell_mapping)

    def test_the_database_novas_list_reads(self):
        # Nova's list query of a cell reads the replica slave_connection
        # names: a replica that does not answer is a cell down for it.
        gone = self.url(os.path.join('no-dir', 'r.db'))
        cctxt = self.cell(connection=self.url('cell.db'),
                          slave_connection=gone)
        # What Nova's engine raises.
        error = self.assertRaises(db_exc.DBError,
                                  cellhealth.CellHealth()._probe, cctxt,
                                  cctxt.cell_mapping)
        self.assertIsInstance(error.inner_exception.orig,
                              sqlite3.OperationalError)
        cctxt = self.cell(connection=gone,
                          slave_connection=self.url('replica.db'))
        cellhealth.CellHealth()._probe(cctxt, cctxt.cell_mapping)


class _Context(object):
    """A request's context, as far as the check uses it."""

    def __init__(self):
        self.stored = 0

    def update_store(self):
        self.stored += 1


class _Health(cellhealth.CellHealth):
    """A check of ``cells`` cells, of which some fail or hang.

    ``down`` fail; ``hung`` answer once ``release`` is set. It records
    who asked which cell, on which thread.
    """

    def __init__(self, cells, down=(), hung=(), error=None):
        super().__init__()
        self.error = error
        self.uuids = ['cell%d' % n for n in range(cells)]
        self.down, self.hung = set(down), set(hung)
        self.release = threading.Event()
        self.asked = []

    def _cells(self):
        if self.error is not None:
            raise self.error
        return [types.SimpleNamespace(uuid=u) for u in self.uuids]

    def _ask(self, ctx, cell):
        self.asked.append((id(ctx), cell.uuid, threading.get_ident()))
        if cell.uuid in self.hung:
            self.release.wait(30)
        if cell.uuid in self.down:
            # The check's own handling of a cell that fails: target_cell
            # raises on this context as on a down cell's, its traceback
            # holding the context.
            return super()._ask(ctx, cell)
        return None


class TestCheck(base.TestCase):

    def setUp(self):
        super().setUp()
        self.addCleanup(cellhealth.shutdown)
        self.flags(query_timeout=5, group='nova_ext_index')

    def health(self, *args, **kwargs):
        health = _Health(*args, **kwargs)
        self.addCleanup(health.release.set)
        return health

    def test_a_check_begun_is_the_requests(self):
        health, ctx = self.health(3, down=['cell2']), _Context()
        health.begin(ctx, CONF)
        self.assertTrue(health.begun(ctx))
        self.assertEqual(['cell2'], health.down_cells(ctx, CONF))
        self.assertEqual(['cell0', 'cell1', 'cell2'],
                         [cell for _ctx, cell, _t in health.asked])
        self.assertEqual({id(ctx)}, {c for c, _cell, _t in health.asked})
        # Asked on the pool's thread with the request's logging context.
        self.assertNotIn(threading.get_ident(),
                         {t for _c, _cell, t in health.asked})
        self.assertEqual(1, ctx.stored)
        # Given once: a second call checks again.
        self.assertFalse(health.begun(ctx))
        self.assertEqual(['cell2'], health.down_cells(ctx, CONF))
        self.assertEqual(6, len(health.asked))
        self.assertEqual(2, health.checks)

    def test_another_requests_check_is_its_own(self):
        health, first, second = self.health(2), _Context(), _Context()
        health.begin(first, CONF)
        self.assertFalse(health.begun(second))
        self.assertEqual([], health.down_cells(second, CONF))
        self.assertTrue(health.begun(first))
        self.assertEqual([], health.down_cells(first, CONF))
        self.assertEqual(sorted([id(first)] * 2 + [id(second)] * 2),
                         sorted(c for c, _cell, _t in health.asked))

    def test_cells_are_asked_in_groups_in_parallel(self):
        per = cellhealth.CELLS_PER_THREAD
        count = per * 2 + 1
        health = self.health(count, hung=['cell0'])
        ctx = _Context()
        health.begin(ctx, CONF)
        # The first group waits for its hung cell, the others answer.
        others = {'cell%d' % n for n in range(per, count)}
        deadline = time.monotonic() + 10
        while len(health.asked) < 1 + len(others):
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.01)
        time.sleep(0.05)
        self.assertEqual({'cell0'} | others,
                         {cell for _c, cell, _t in health.asked})
        health.release.set()
        self.assertEqual([], health.down_cells(ctx, CONF))
        # Then the rest of its group, in turn, on its thread.
        first = [(cell, t) for _c, cell, t in health.asked
                 if int(cell[4:]) < per]
        self.assertEqual(['cell%d' % n for n in range(per)],
                         [cell for cell, _t in first])
        self.assertEqual(1, len({t for _cell, t in first}))
        self.assertEqual(3, ctx.stored)

    def test_a_cell_that_does_not_answer_in_time_is_down(self):
        self.flags(query_timeout=0.2, group='nova_ext_index')
        health = self.health(3, hung=['cell1'])
        started = time.monotonic()
        # cell2 is after the hung cell in its group: unasked, and down as a
        # cell Nova's scatter-gather gave no thread in time.
        self.assertEqual(['cell1', 'cell2'],
                         health.down_cells(_Context(), CONF))
        self.assertGreaterEqual(time.monotonic() - started, 0.2)
        self.assertNotIn('cell2', [c for _ctx, c, _t in health.asked])
        health.release.set()

    def test_what_a_check_begun_raises_is_raised_when_asked(self):
        health, ctx = self.health(1, error=ValueError('no cells')), _Context()
        health.begin(ctx, CONF)
        self.assertTrue(health.begun(ctx))
        self.assertRaises(ValueError, health.down_cells, ctx, CONF)
        self.assertFalse(health.begun(ctx))

    def test_a_request_gone_leaves_nothing(self):
        health = self.health(2, down=['cell1'])
        health.begin(_Context(), CONF)
        deadline = time.monotonic() + 10
        while len(health.asked) < 2:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.01)
        cellhealth.shutdown()
        gc.collect()
        self.assertEqual(0, len(health._begun))

    def test_a_request_whose_check_raised_gone_leaves_nothing(self):
        health = self.health(1, error=ValueError('no cells'))
        health.begin(_Context(), CONF)
        gc.collect()
        self.assertEqual(0, len(health._begun))
