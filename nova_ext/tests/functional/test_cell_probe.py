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
"""A cell on MariaDB and PostgreSQL, asked before Nova connected to it.

Each class starts its own server (sqlserver.py) and stops it and starts it
again, as a process that starts while a cell's database is down finds it:
the cell is asked on nova_ext's own connection, down while the server is,
answering once it is back, and Nova's engine of the cell is left to Nova.
"""

import fixtures
from nova import conf as nova_conf
from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova import objects
from oslo_config import fixture as config_fixture
from oslo_utils import uuidutils
from oslotest import base as oslotest_base
import sqlalchemy as sa

from nova_ext import direct_reads
from nova_ext.index.apply import cell_probe
from nova_ext.tests.functional import sqlserver


class _CellProbe(sqlserver.OnServer):

    def setUp(self):
        super().setUp()
        objects.register_all()
        self.useFixture(fixtures.MonkeyPatch('nova.context.CELL_CACHE', {}))
        direct_reads.dispose()
        self.addCleanup(direct_reads.dispose)
        conf = self.useFixture(config_fixture.Config(nova_conf.CONF))
        # Were Nova's engine started while the server is down, oslo.db
        # would try again once, a second later, and say so.
        conf.config(max_retries=2, retry_interval=1, group='database')
        self.retries = self.useFixture(fixtures.FakeLogger(
            name='oslo_db.sqlalchemy.engines'))
        self.cell = objects.CellMapping(
            uuid=uuidutils.generate_uuid(), name='cell1',
            database_connection=self.new_database('cell'),
            transport_url='none:///', disabled=False)
        # Nova's own targeting makes the cell's database API.
        targeted = nova_context.target_cell(nova_context.get_admin_context(),
                                            self.cell)
        self.cctxt = targeted.__enter__()
        self.addCleanup(targeted.__exit__, None, None, None)
        self.manager = main_db_api.get_context_manager(self.cctxt)

    def test_down_then_back_before_nova_connected(self):
        cell_probe.ask(self.cctxt, self.cell)
        self.sql_server.halt()
        try:
            error = self.assertRaises(sa.exc.DBAPIError, cell_probe.ask,
                                      self.cctxt, self.cell)
            self.assertIsInstance(
                error.orig, sa.engine.make_url(
                    self.cell.database_connection).get_dialect(
                ).import_dbapi().Error)
            self.assertRaises(sa.exc.DBAPIError, cell_probe.before_reads,
                              self.cctxt, self.cell)
        finally:
            self.sql_server.resume()
        cell_probe.ask(self.cctxt, self.cell)
        cell_probe.before_reads(self.cctxt, self.cell)
        self.assertFalse(self.manager.is_started)
        self.assertNotIn('SQL connection failed', self.retries.output)
        [engine] = direct_reads._ENGINES.values()
        self.assertEqual(self.cell.database_connection,
                         engine.url.render_as_string(hide_password=False))

    def test_once_nova_connected(self):
        cell_probe.ask(self.cctxt, self.cell)
        [by_url] = direct_reads._ENGINES.values()
        novas = self.manager.reader.get_engine()
        self.addCleanup(novas.dispose)
        cell_probe.ask(self.cctxt, self.cell)
        # Asked for Nova's engine, on ours for its URL.
        self.assertIn(novas, direct_reads._OURS.get(None, dict))
        # The same engine of ours as asked at the mapping's URL before.
        self.assertEqual([by_url], direct_reads._ENGINES.values())
        self.assertEqual(novas.url, by_url.url)
        self.sql_server.halt()
        try:
            self.assertRaises(sa.exc.DBAPIError, cell_probe.ask,
                              self.cctxt, self.cell)
        finally:
            self.sql_server.resume()
        cell_probe.ask(self.cctxt, self.cell)


class TestCellProbeOnMariaDB(_CellProbe, oslotest_base.BaseTestCase):

    SERVER = sqlserver.MariaDB


class TestCellProbeOnPostgreSQL(_CellProbe, oslotest_base.BaseTestCase):

    SERVER = sqlserver.PostgreSQL
