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

import os
import sqlite3

import fixtures
import futurist
import sqlalchemy as sa

from nova_ext.instance_list import direct_reads
from nova_ext.tests.unit import base


class TestAsk(base.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        direct_reads.dispose()
        self.addCleanup(direct_reads.dispose)

    def engine(self, name):
        """Nova's engine of a cell database, as far as the probe reads it."""
        engine = sa.create_engine(
            'sqlite:///%s' % os.path.join(self.tmp, name))
        self.addCleanup(engine.dispose)
        return engine

    def test_a_database_that_answers_keeps_its_connection(self):
        novas = self.engine('cell.db')
        direct_reads.ask(novas)
        (probe,) = direct_reads._ENGINES.values()
        self.assertIsNot(novas, probe)
        self.assertEqual(novas.url, probe.url)
        self.assertEqual(1, probe.pool.checkedin())
        direct_reads.ask(novas)
        self.assertEqual(1, probe.pool.checkedin())
        # One engine per database, whichever of Nova's engines reads it.
        direct_reads.ask(self.engine('cell.db'))
        self.assertEqual([probe], list(direct_reads._ENGINES.values()))
        direct_reads.ask(self.engine('other.db'))
        self.assertEqual(2, len(direct_reads._ENGINES))

    def test_a_database_that_does_not_answer(self):
        gone = self.engine(os.path.join('no-dir', 'cell.db'))
        # The driver's error, as a SQLAlchemy engine raises it.
        error = self.assertRaises(sa.exc.DBAPIError, direct_reads.ask, gone)
        self.assertIsInstance(error.orig, sqlite3.OperationalError)
        (probe,) = direct_reads._ENGINES.values()
        self.assertEqual(0, probe.pool.checkedin())

    def test_a_statement_the_database_refuses(self):
        novas = self.engine('cell.db')
        missing = sa.Table('missing', sa.MetaData(),
                           sa.Column('p', sa.Integer))
        error = self.assertRaises(sa.exc.DBAPIError, direct_reads.first,
                                  novas, sa.select(missing.c.p))
        self.assertIsInstance(error.orig, sqlite3.OperationalError)
        self.assertIn('missing', str(error))
        # Not a connection the database dropped: the next read is answered.
        self.assertEqual((1,), direct_reads.first(
            novas, sa.select(sa.literal_column('1'))))

    def test_any_thread_asks_on_the_kept_connections(self):
        novas = self.engine('cell.db')
        direct_reads.ask(novas)
        with futurist.ThreadPoolExecutor(max_workers=4) as pool:
            asked = [pool.submit(direct_reads.ask, novas) for _ in range(8)]
            for future in asked:
                # What it raised, if anything.
                future.result()
        (probe,) = direct_reads._ENGINES.values()
        self.assertLessEqual(probe.pool.checkedin(), direct_reads.POOL_SIZE)

    def test_a_statement_with_parameters(self):
        # SQLite's driver takes them by position.
        novas = self.engine('api.db')
        table = sa.Table('t', sa.MetaData(), sa.Column('p', sa.String(8)))
        table.metadata.create_all(novas)
        of = sa.select(sa.exists().where(table.c.p == sa.bindparam('p')))
        self.assertFalse(direct_reads.scalar(novas, of, {'p': 'p1'}))
        with novas.begin() as conn:
            conn.execute(table.insert().values(p='p1'))
        # Read on the kept connection, which sees what was committed since.
        self.assertTrue(direct_reads.scalar(novas, of, {'p': 'p1'}))
        self.assertFalse(direct_reads.scalar(novas, of, {'p': 'p2'}))
        self.assertIsNone(direct_reads.scalar(
            novas, sa.select(table.c.p).where(table.c.p == 'p2')))

    def test_the_first_row(self):
        novas = self.engine('index.db')
        table = sa.Table('t', sa.MetaData(), sa.Column('p', sa.String(8)),
                         sa.Column('n', sa.Integer))
        table.metadata.create_all(novas)
        with novas.begin() as conn:
            conn.execute(table.insert().values([{'p': 'a', 'n': 2},
                                                {'p': 'b', 'n': 1}]))
        both = sa.select(sa.exists().select_from(table),
                         sa.select(sa.func.max(table.c.n))
                         .scalar_subquery())
        self.assertEqual((1, 2), direct_reads.first(novas, both))
        self.assertEqual(('b', 1), direct_reads.first(
            novas, sa.select(table.c.p, table.c.n).order_by(table.c.n)))
        self.assertIsNone(direct_reads.first(
            novas, sa.select(table.c.p).where(table.c.n == 3)))

    def test_a_database_in_memory_is_read_through_novas_engine(self):
        novas = sa.create_engine('sqlite://', poolclass=sa.pool.StaticPool)
        self.addCleanup(novas.dispose)
        table = sa.Table('t', sa.MetaData(), sa.Column('p', sa.String(8)))
        table.metadata.create_all(novas)
        with novas.begin() as conn:
            conn.execute(table.insert().values(p='p1'))
        self.assertTrue(direct_reads.scalar(
            novas, sa.select(sa.exists().select_from(table))))
        self.assertEqual(('p1',), direct_reads.first(
            novas, sa.select(table.c.p)))
        direct_reads.ask(novas)
        self.assertEqual({}, direct_reads._ENGINES)

    def test_dispose_forgets_the_engines(self):
        direct_reads.ask(self.engine('cell.db'))
        direct_reads.dispose()
        self.assertEqual({}, direct_reads._ENGINES)
