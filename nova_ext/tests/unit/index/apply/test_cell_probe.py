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
"""A cell asked before and after Nova's engine of it started.

The cells are Nova's own context managers (``create_context_manager``),
targeted by Nova's ``target_cell``; a database that refuses connections is
a port of 127.0.0.1 nothing listens on. The backends' servers are in
``nova_ext.tests.functional.test_cell_probe``.
"""

import os
import socket

import fixtures
from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova import objects
from oslo_utils import uuidutils
import sqlalchemy as sa

from nova_ext import direct_reads
from nova_ext.index.apply import cell_probe
from nova_ext.tests.unit import base


def closed_port():
    """A port of 127.0.0.1 that refuses connections."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class TestCellProbe(base.TestCase):

    def setUp(self):
        super().setUp()
        objects.register_all()
        self.useFixture(fixtures.MonkeyPatch('nova.context.CELL_CACHE', {}))
        self.addCleanup(direct_reads.dispose)
        # Were Nova's engine started against a database that refuses it,
        # oslo.db would try again once, a second later, and say so.
        self.flags(max_retries=2, retry_interval=1, group='database')
        self.retries = self.useFixture(fixtures.FakeLogger(
            name='oslo_db.sqlalchemy.engines'))
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def target(self, url):
        """``(cell context, cell mapping)``, Nova's database API of it."""
        cell = objects.CellMapping(
            uuid=uuidutils.generate_uuid(), name='c', database_connection=url,
            transport_url='none:///', disabled=False)
        cm = nova_context.target_cell(nova_context.get_admin_context(), cell)
        cctxt = cm.__enter__()
        self.addCleanup(cm.__exit__, None, None, None)
        return cctxt, cell

    def refused(self):
        return self.target('mysql+pymysql://nova:pw@127.0.0.1:%d/nova'
                           % closed_port())

    def test_a_database_down_before_nova_connected(self):
        cctxt, cell = self.refused()
        manager = main_db_api.get_context_manager(cctxt)
        self.assertRaises(sa.exc.DBAPIError, cell_probe.ask, cctxt, cell)
        self.assertRaises(sa.exc.DBAPIError, cell_probe.before_reads,
                          cctxt, cell)
        # Asked on a connection of nova_ext's own: Nova's engine did not
        # begin to start, nor to try again.
        self.assertFalse(manager.is_started)
        self.assertNotIn('SQL connection failed', self.retries.output)
        [engine] = direct_reads._ENGINES.values()
        self.assertEqual(cell.database_connection,
                         engine.url.render_as_string(hide_password=False))

    def test_nova_reads_a_replica(self):
        # Nova's reads of every cell go to [database]slave_connection.
        replica = ('mysql+pymysql://nova:pw@127.0.0.1:%d/replica'
                   % closed_port())
        self.flags(slave_connection=replica, group='database')
        cctxt, cell = self.refused()
        self.assertRaises(sa.exc.DBAPIError, cell_probe.ask, cctxt, cell)
        [engine] = direct_reads._ENGINES.values()
        self.assertEqual(replica,
                         engine.url.render_as_string(hide_password=False))

    def test_once_nova_connected_its_engine(self):
        url = 'sqlite:///%s' % os.path.join(self.tmp, 'cell.db')
        cctxt, cell = self.target(url)
        manager = main_db_api.get_context_manager(cctxt)
        self.addCleanup(lambda: manager.reader.get_engine().dispose())
        # SQLite: only through Nova's engine, which that starts.
        cell_probe.ask(cctxt, cell)
        self.assertTrue(manager.is_started)
        self.assertEqual([], direct_reads._ENGINES.values())
        # Started, its engine is asked, and nothing before a read.
        cell_probe.before_reads(cctxt, cell)
        cell_probe.ask(cctxt, cell)
        self.assertEqual([], direct_reads._ENGINES.values())

    def test_before_reads_once_nova_connected(self):
        cctxt, cell = self.refused()
        manager = main_db_api.get_context_manager(cctxt)
        url = 'sqlite:///%s' % os.path.join(self.tmp, 'other.db')
        # Nova's engine, started on another database than the mapping's:
        # before_reads asks nothing once it started.
        manager.configure(connection=url)
        manager.reader.get_engine()
        self.addCleanup(lambda: manager.reader.get_engine().dispose())
        cell_probe.before_reads(cctxt, cell)
        self.assertEqual([], direct_reads._ENGINES.values())
