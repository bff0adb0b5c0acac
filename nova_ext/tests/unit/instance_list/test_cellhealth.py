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
import types

import fixtures
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade

from nova_ext.instance_list import cellhealth
from nova_ext.instance_list import direct_reads
from nova_ext.tests.unit import base


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
        return types.SimpleNamespace(db_connection=manager)

    def url(self, name):
        return 'sqlite:///%s' % os.path.join(self.tmp, name)

    def test_a_cell_that_answers(self):
        cctxt = self.cell(connection=self.url('cell.db'))
        self.assertTrue(cellhealth.CellHealth()._probe(cctxt))

    def test_the_database_novas_list_reads(self):
        # Nova's list query of a cell reads the replica slave_connection
        # names: a replica that does not answer is a cell down for it.
        gone = self.url(os.path.join('no-dir', 'r.db'))
        cctxt = self.cell(connection=self.url('cell.db'),
                          slave_connection=gone)
        # What Nova's engine raises.
        error = self.assertRaises(db_exc.DBError,
                                  cellhealth.CellHealth()._probe, cctxt)
        self.assertIsInstance(error.inner_exception.orig,
                              sqlite3.OperationalError)
        cctxt = self.cell(connection=gone,
                          slave_connection=self.url('replica.db'))
        self.assertTrue(cellhealth.CellHealth()._probe(cctxt))


class _Context(object):
    """A request's context, as far as the check begun early uses it."""

    def __init__(self):
        self.stored = 0

    def update_store(self):
        self.stored += 1


class _Health(cellhealth.CellHealth):
    """Cells' checks that answer ``down`` and count who asked."""

    def __init__(self, down=(), error=None):
        super().__init__()
        self.asked = []
        self.down = list(down)
        self.error = error

    def _check(self, ctx, conf):
        self.asked.append(id(ctx))
        if self.error is not None:
            raise self.error
        return self.down


class TestBegun(base.TestCase):

    def setUp(self):
        super().setUp()
        self.addCleanup(cellhealth.shutdown)

    def test_a_check_begun_is_the_requests(self):
        health, ctx = _Health(down=['cell2']), _Context()
        health.begin(ctx, None)
        self.assertTrue(health.begun(ctx))
        self.assertEqual(['cell2'], health.down_cells(ctx, None))
        self.assertEqual([id(ctx)], health.asked)
        # Made on the pool's thread with the request's logging context.
        self.assertEqual(1, ctx.stored)
        # Given once: a second call checks again.
        self.assertFalse(health.begun(ctx))
        health.down_cells(ctx, None)
        self.assertEqual([id(ctx)] * 2, health.asked)

    def test_another_requests_check_is_its_own(self):
        health, first, second = _Health(), _Context(), _Context()
        health.begin(first, None)
        self.assertFalse(health.begun(second))
        self.assertEqual([], health.down_cells(second, None))
        self.assertTrue(health.begun(first))
        health.down_cells(first, None)
        self.assertCountEqual([id(first), id(second)], health.asked)

    def test_what_a_check_begun_raises_is_raised(self):
        health, ctx = _Health(error=ValueError('no cells')), _Context()
        health.begin(ctx, None)
        self.assertRaises(ValueError, health.down_cells, ctx, None)
        self.assertFalse(health.begun(ctx))

    def test_a_request_gone_leaves_nothing(self):
        health = _Health()
        health.begin(_Context(), None)
        cellhealth.shutdown()
        gc.collect()
        self.assertEqual(0, len(health._begun))
