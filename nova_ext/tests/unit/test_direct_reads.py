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
import sqlalchemy as sa

from nova_ext import direct_reads
from nova_ext.tests.unit import base


def two_rows(engine):
    """A table ``t`` of ``engine``'s database, with rows (a, 2), (b, 1)."""
    table = sa.Table('t', sa.MetaData(), sa.Column('p', sa.String(8)),
                     sa.Column('n', sa.Integer))
    table.metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(table.insert().values([{'p': 'a', 'n': 2},
                                            {'p': 'b', 'n': 1}]))
    return table


class TestOnSQLite(base.TestCase):
    """SQLite's databases, read through the engine given.

    nova_ext's own engines, for the databases with round trips, are tested
    on MariaDB and PostgreSQL (functional/test_direct_reads.py).
    """

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        direct_reads.dispose()
        self.addCleanup(direct_reads.dispose)

    def engine(self, name):
        """Nova's engine of a database, as far as the reads use it."""
        engine = sa.create_engine(
            'sqlite:///%s' % os.path.join(self.tmp, name))
        self.addCleanup(engine.dispose)
        return engine

    def test_a_database_file_is_read_through_the_engine_given(self):
        novas = self.engine('cell.db')
        direct_reads.ask(novas)
        self.assertEqual([], direct_reads._ENGINES.values())
        # On the engine's own connections, given back to its pool.
        self.assertEqual(1, novas.pool.checkedin())

    def test_a_database_that_does_not_answer(self):
        gone = self.engine(os.path.join('no-dir', 'cell.db'))
        # What the engine raises.
        error = self.assertRaises(sa.exc.DBAPIError, direct_reads.ask, gone)
        self.assertIsInstance(error.orig, sqlite3.OperationalError)
        self.assertEqual([], direct_reads._ENGINES.values())

    def test_a_statement_with_parameters(self):
        novas = self.engine('api.db')
        table = sa.Table('t', sa.MetaData(), sa.Column('p', sa.String(8)))
        table.metadata.create_all(novas)
        of = sa.select(sa.exists().where(table.c.p == sa.bindparam('p')))
        self.assertFalse(direct_reads.scalar(novas, of, {'p': 'p1'}))
        with novas.begin() as conn:
            conn.execute(table.insert().values(p='p1'))
        self.assertTrue(direct_reads.scalar(novas, of, {'p': 'p1'}))
        self.assertFalse(direct_reads.scalar(novas, of, {'p': 'p2'}))
        self.assertIsNone(direct_reads.scalar(
            novas, sa.select(table.c.p).where(table.c.p == 'p2')))

    def test_the_first_row(self):
        novas = self.engine('index.db')
        table = two_rows(novas)
        both = sa.select(sa.exists().select_from(table),
                         sa.select(sa.func.max(table.c.n))
                         .scalar_subquery())
        self.assertEqual((1, 2), direct_reads.first(novas, both))
        self.assertEqual(('b', 1), direct_reads.first(
            novas, sa.select(table.c.p, table.c.n).order_by(table.c.n)))
        self.assertIsNone(direct_reads.first(
            novas, sa.select(table.c.p).where(table.c.n == 3)))

    def test_every_row(self):
        novas = self.engine('index.db')
        table = two_rows(novas)
        of = sa.select(table.c.p, table.c.n).where(
            table.c.p.in_([sa.bindparam('p0'), sa.bindparam('p1')]))
        self.assertEqual([('b', 1), ('a', 2)], direct_reads.rows(
            novas, of.order_by(table.c.n), {'p0': 'a', 'p1': 'b'}))
        self.assertEqual([('a', 2)], direct_reads.rows(
            novas, of, {'p0': 'a', 'p1': 'c'}))
        self.assertEqual([], direct_reads.rows(
            novas, of, {'p0': 'c', 'p1': 'c'}))

    def test_a_database_in_memory(self):
        # Only the engine given reaches it.
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
        self.assertEqual([], direct_reads._ENGINES.values())
