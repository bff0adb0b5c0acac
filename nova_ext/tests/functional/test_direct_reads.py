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
"""The reads on nova_ext's own connections, on MariaDB and PostgreSQL.

Each class starts its own server (sqlserver.py), stops it and starts it
again: the cells' check must find the database down while it is, and
answering once it is back, on the connections it kept from before; and
a read on a kept connection sees every row committed before it.
"""

import futurist
from oslotest import base as oslotest_base
import sqlalchemy as sa

from nova_ext import direct_reads
from nova_ext.tests.functional import sqlserver
from nova_ext.tests.unit import test_direct_reads as \
    unit_direct_reads


class _Probe(sqlserver.OnServer):

    def setUp(self):
        super().setUp()
        direct_reads.dispose()
        self.addCleanup(direct_reads.dispose)
        # Nova's engine of the cell, as far as the check reads it.
        self.novas = sa.create_engine(self.new_database('cell'))
        self.addCleanup(self.novas.dispose)

    def probe(self):
        (probe,) = direct_reads._ENGINES.values()
        return probe

    def kept_connection(self):
        """The server's id of the connection the next read is asked on."""
        return direct_reads.scalar(self.novas, self.CONNECTION_ID)

    def test_one_engine_per_database(self):
        direct_reads.ask(self.novas)
        probe = self.probe()
        self.assertIsNot(self.novas, probe)
        self.assertEqual(self.novas.url, probe.url)
        # Whichever of Nova's engines reads it.
        again = sa.create_engine(self.novas.url)
        self.addCleanup(again.dispose)
        direct_reads.ask(again)
        self.assertEqual([probe], list(direct_reads._ENGINES.values()))
        other = sa.create_engine(self.new_database('other'))
        self.addCleanup(other.dispose)
        direct_reads.ask(other)
        self.assertEqual(2, len(direct_reads._ENGINES.values()))
        direct_reads.dispose()
        self.assertEqual([], direct_reads._ENGINES.values())

    def test_the_first_row(self):
        table = unit_direct_reads.two_rows(self.novas)
        both = sa.select(sa.exists().select_from(table),
                         sa.select(sa.func.max(table.c.n))
                         .scalar_subquery())
        self.assertEqual((True, 2), direct_reads.first(self.novas, both))
        self.assertEqual(('b', 1), direct_reads.first(
            self.novas,
            sa.select(table.c.p, table.c.n).order_by(table.c.n)))
        self.assertIsNone(direct_reads.first(
            self.novas, sa.select(table.c.p).where(table.c.n == 3)))

    def test_every_row(self):
        table = unit_direct_reads.two_rows(self.novas)
        of = sa.select(table.c.p, table.c.n).where(
            table.c.p.in_([sa.bindparam('p0'), sa.bindparam('p1')]))
        self.assertEqual([('b', 1), ('a', 2)], direct_reads.rows(
            self.novas, of.order_by(table.c.n), {'p0': 'a', 'p1': 'b'}))
        self.assertEqual([], direct_reads.rows(
            self.novas, of, {'p0': 'c', 'p1': 'c'}))

    def test_a_statement_the_database_refuses(self):
        missing = sa.Table('missing', sa.MetaData(),
                           sa.Column('p', sa.Integer))
        kept = self.kept_connection()
        error = self.assertRaises(sa.exc.DBAPIError, direct_reads.first,
                                  self.novas, sa.select(missing.c.p))
        self.assertIsInstance(error.orig,
                              self.novas.dialect.loaded_dbapi.Error)
        self.assertIn('missing', str(error))
        # Raised as it came, not asked again: the connection was not
        # dropped, and stays the one kept.
        self.assertEqual(1, self.probe().pool.checkedin())
        self.assertEqual(kept, self.kept_connection())

    def test_any_thread_asks_on_the_kept_connections(self):
        direct_reads.ask(self.novas)
        with futurist.ThreadPoolExecutor(max_workers=4) as pool:
            asked = [pool.submit(direct_reads.ask, self.novas)
                     for _ in range(8)]
            for future in asked:
                # What it raised, if anything.
                future.result()
        self.assertLessEqual(self.probe().pool.checkedin(),
                             direct_reads.POOL_SIZE)
        self.assertEqual([], self.open_transactions())

    def test_one_query_no_transaction_left(self):
        direct_reads.ask(self.novas)
        direct_reads.ask(self.novas)
        self.assertEqual(1, self.probe().pool.checkedin())
        # The kept connection is in no transaction: the query began none
        # (autocommit), and none is rolled back when it is given back.
        self.assertEqual([], self.open_transactions())

    def test_a_kept_connection_reads_what_was_committed_since(self):
        table = sa.Table('build_requests', sa.MetaData(),
                         sa.Column('project_id', sa.String(36)))
        table.metadata.create_all(self.novas)
        of = sa.select(sa.exists().where(
            table.c.project_id == sa.bindparam('project_id')))
        self.assertFalse(direct_reads.scalar(self.novas, of,
                                             {'project_id': 'p1'}))
        self.assertEqual(1, self.probe().pool.checkedin())
        with self.novas.begin() as conn:
            conn.execute(table.insert().values(project_id='p1'))
        self.assertTrue(direct_reads.scalar(self.novas, of,
                                            {'project_id': 'p1'}))
        self.assertFalse(direct_reads.scalar(self.novas, of,
                                             {'project_id': 'p2'}))
        with self.novas.begin() as conn:
            conn.execute(table.delete())
        self.assertFalse(direct_reads.scalar(self.novas, of,
                                             {'project_id': 'p1'}))
        self.assertEqual([], self.open_transactions())

    def test_a_server_stopped_and_started_again(self):
        direct_reads.ask(self.novas)
        self.assertEqual(1, self.probe().pool.checkedin())
        self.sql_server.halt()
        try:
            # Asked on the kept connection, then on a new one: down.
            error = self.assertRaises(sa.exc.DBAPIError,
                                      direct_reads.ask, self.novas)
            self.assertIsInstance(error.orig,
                                  self.novas.dialect.loaded_dbapi.Error)
            self.assertEqual(0, self.probe().pool.checkedin())
        finally:
            self.sql_server.resume()
        direct_reads.ask(self.novas)
        self.assertEqual(1, self.probe().pool.checkedin())

    def test_a_kept_connection_the_server_dropped(self):
        # A restart between two checks: the kept connection fails, a new
        # one answers, and the database is not taken for down.
        direct_reads.ask(self.novas)
        self.sql_server.halt()
        self.sql_server.resume()
        direct_reads.ask(self.novas)
        self.assertEqual(1, self.probe().pool.checkedin())
        self.assertEqual([], self.open_transactions())

    def test_a_row_inserted_and_committed_at_once(self):
        # The index's sequence: an auto-increment key, a row of defaults.
        table = sa.Table('sequence', sa.MetaData(),
                         sa.Column('id', sa.Integer, primary_key=True,
                                   autoincrement=True))
        table.metadata.create_all(self.novas)
        first = direct_reads.inserted_id(self.novas, table)
        second = direct_reads.inserted_id(self.novas, table)
        self.assertLess(first, second)
        # Committed: another connection reads both.
        with self.novas.connect() as conn:
            self.assertEqual([first, second], list(conn.execute(
                sa.select(table.c.id).order_by(table.c.id)).scalars()))
        self.assertEqual([], self.open_transactions())
        # A restart between two: the kept connection fails, a new one
        # inserts, and the numbers still rise.
        self.sql_server.halt()
        self.sql_server.resume()
        third = direct_reads.inserted_id(self.novas, table)
        self.assertLess(second, third)
        self.assertEqual(1, self.probe().pool.checkedin())
        # The test's own connection was dropped too.
        self.novas.dispose()
        with self.novas.connect() as conn:
            self.assertEqual(third, conn.execute(
                sa.select(sa.func.max(table.c.id))).scalar())


class TestProbeOnMariaDB(_Probe, oslotest_base.BaseTestCase):

    SERVER = sqlserver.MariaDB
    CONNECTION_ID = sa.select(sa.func.connection_id())

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
    CONNECTION_ID = sa.select(sa.func.pg_backend_pid())

    def open_transactions(self):
        with self.novas.connect() as conn:
            return conn.execute(sa.text(
                "SELECT pid FROM pg_stat_activity WHERE state LIKE "
                "'idle in transaction%' AND pid != pg_backend_pid()")
            ).fetchall()
