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
"""What nova_ext relies on of Nova's database API of a cell.

``nova_ext.seams.internals.cell_databases`` tells the URL Nova's reads of
a cell go to before Nova's engine connects, and whether it has: these
tests fail when the engine Nova starts for a cell reads another database
than the one it tells, or Nova makes the cell's database API otherwise.
"""

import os

import fixtures
from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova import objects
from oslo_utils import uuidutils

from nova_ext.seams.internals import cell_databases
from nova_ext.tests.unit import base


class TestCellDatabases(base.TestCase):

    def setUp(self):
        super().setUp()
        objects.register_all()
        self.useFixture(fixtures.MonkeyPatch('nova.context.CELL_CACHE', {}))
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def url(self, name):
        return 'sqlite:///%s' % os.path.join(self.tmp, name)

    def started(self, url):
        """Nova's database API of a cell at ``url``, as Nova starts it."""
        cell = objects.CellMapping(
            uuid=uuidutils.generate_uuid(), name='c', database_connection=url,
            transport_url='none:///', disabled=False)
        with nova_context.target_cell(nova_context.get_admin_context(),
                                      cell) as cctxt:
            manager = main_db_api.get_context_manager(cctxt)
        self.assertIsNone(cell_databases.started_reader(manager))
        engine = manager.reader.get_engine()
        self.addCleanup(engine.dispose)
        self.addCleanup(manager.writer.get_engine().dispose)
        self.assertIs(engine, cell_databases.started_reader(manager))
        return cell, engine

    def assertReads(self, cell, engine):
        self.assertEqual(
            engine.url.render_as_string(hide_password=False),
            cell_databases._configured_reader(cell).render_as_string(
                hide_password=False))

    def test_the_cells_own_database(self):
        self.assertReads(*self.started(self.url('cell.db')))

    def test_the_replica_of_every_cell(self):
        self.flags(slave_connection=self.url('replica.db'), group='database')
        cell, engine = self.started(self.url('cell.db'))
        self.assertIn('replica.db', engine.url.database)
        self.assertReads(cell, engine)

    def test_the_connection_parameters(self):
        self.flags(connection_parameters='timeout=7', group='database')
        cell, engine = self.started(self.url('cell.db'))
        self.assertEqual('7', engine.url.query['timeout'])
        self.assertReads(cell, engine)

    def test_no_url_of_sqlite_nor_of_a_name(self):
        cell = objects.CellMapping(database_connection=self.url('c.db'))
        self.assertIsNone(cell_databases.reader_url(cell))
        # Nova's test harness names its cells' databases by their uuids.
        cell = objects.CellMapping(database_connection=uuidutils.
                                   generate_uuid())
        self.assertIsNone(cell_databases.reader_url(cell))
        url = 'mysql+pymysql://nova:pw@127.0.0.1:3306/nova_cell1'
        cell = objects.CellMapping(database_connection=url)
        self.assertEqual(url, cell_databases.reader_url(
            cell).render_as_string(hide_password=False))
