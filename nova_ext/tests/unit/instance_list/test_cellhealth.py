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

import os
import types

import fixtures
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade
import sqlalchemy as sa

from nova_ext.instance_list import cellhealth
from nova_ext.tests.unit import base


class TestProbe(base.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path

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
        self.assertRaises((sa.exc.SQLAlchemyError, db_exc.DBError),
                          cellhealth.CellHealth()._probe, cctxt)
        cctxt = self.cell(connection=gone,
                          slave_connection=self.url('replica.db'))
        self.assertTrue(cellhealth.CellHealth()._probe(cctxt))
