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
"""The cells' check's query, on real MariaDB and PostgreSQL servers.

Each class starts its own server (sqlserver.py), stops it and starts it
again: the check must find the database down while it is, and answering
once it is back, on the connections it kept from before.
"""

from oslotest import base as oslotest_base
import sqlalchemy as sa

from nova_ext.instance_list import cellprobe
from nova_ext.tests.functional import sqlserver


class _Probe(sqlserver.OnServer):

    def setUp(self):
        super().setUp()
        cellprobe.dispose()
        self.addCleanup(cellprobe.dispose)
        # Nova's engine of the cell, as far as the check reads it.
        self.novas = sa.create_engine(self.new_database('cell'))
        self.addCleanup(self.novas.dispose)

    def probe(self):
        (probe,) = cellprobe._ENGINES.values()
        return probe

    def test_one_query_no_transaction_left(self):
        cellprobe.ask(self.novas)
        cellprobe.ask(self.novas)
        self.assertEqual(1, self.probe().pool.checkedin())
        # The kept connection is in no transaction: the query began none
        # (autocommit), and none is rolled back when it is given back.
        self.assertEqual([], self.open_transactions())

    def test_a_server_stopped_and_started_again(self):
        cellprobe.ask(self.novas)
        self.assertEqual(1, self.probe().pool.checkedin())
        self.sql_server.halt()
        try:
            # Asked on the kept connection, then on a new one: down.
            self.assertRaises(self.novas.dialect.loaded_dbapi.Error,
                              cellprobe.ask, self.novas)
        finally:
            self.sql_server.resume()
        cellprobe.ask(self.novas)
        self.assertEqual(1, self.probe().pool.checkedin())

    def test_a_kept_connection_the_server_dropped(self):
        # A restart between two checks: the kept connection fails, a new
        # one answers, and the database is not taken for down.
        cellprobe.ask(self.novas)
        self.sql_server.halt()
        self.sql_server.resume()
        cellprobe.ask(self.novas)
        self.assertEqual([], self.open_transactions())


class TestProbeOnMariaDB(_Probe, oslotest_base.BaseTestCase):

    SERVER = sqlserver.MariaDB

    def open_transactions(self):
        # As the kept connection itself tells.
        conn = self.probe().raw_connection()
        try:
            cursor = conn.cursor()
            cursor.execute('SELECT @@in_transaction')
            return [row for row in cursor.fetchall() if row[0]]
        finally:
            conn.close()


class TestProbeOnPostgreSQL(_Probe, oslotest_base.BaseTestCase):

    SERVER = sqlserver.PostgreSQL

    def open_transactions(self):
        with self.novas.connect() as conn:
            return conn.execute(sa.text(
                "SELECT pid FROM pg_stat_activity WHERE state LIKE "
                "'idle in transaction%' AND pid != pg_backend_pid()")
            ).fetchall()
