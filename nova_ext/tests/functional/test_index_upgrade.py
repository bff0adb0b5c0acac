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
"""Upgrading the index schema from every revision, with data in every table.

On SQLite, PostgreSQL and MariaDB. MariaDB commits each DDL statement as it
runs, so a revision that fails halfway leaves part of itself behind while
``alembic_version`` names the revision before it: ``db_sync`` run again must
complete it. The failure is forced at a statement in the middle of each
revision, by a listener on the engine.
"""

import datetime
import decimal
import os

import fixtures
from oslo_config import fixture as config_fixture
from oslotest import base as oslotest_base
import sqlalchemy as sa

from nova_ext import conf as ext_conf
from nova_ext.index import db
from nova_ext.index.upkeep import migration
from nova_ext.tests.functional import sqlserver

CONF = ext_conf.CONF

#: The instance every uuid column names, so that revisions which relate
#: tables by uuid (0003 marks indexed instances) find a match.
INSTANCE = '8d3d6f5e-4bb4-4c5e-9a4a-1f3c9c0b6a01'
WHEN = datetime.datetime(2026, 1, 2, 3, 4, 5)
_VALUES = {int: 1, float: 5.0, bool: True, datetime.datetime: WHEN,
           decimal.Decimal: decimal.Decimal(5), bytes: b'x'}


class Forced(Exception):
    """The failure a test injects into a migration."""


def _value(column):
    if getattr(column.type, 'enums', None):
        return column.type.enums[0]
    if column.type.__visit_name__.upper() == 'INET':
        # Nova's IP address columns, PostgreSQL's INET.
        return '192.0.2.1'
    python_type = column.type.python_type
    if python_type is str:
        if 'uuid' in column.name:
            return INSTANCE
        return 'v%s' % column.name[:max(0, (column.type.length or 99) - 1)]
    return _VALUES[python_type]


def _tables(engine):
    metadata = sa.MetaData()
    metadata.reflect(engine)
    return {name: table for name, table in metadata.tables.items()
            if name != 'alembic_version'}


def _fill(engine):
    """A row in every table; returns ``{table: [row as a dict]}``."""
    tables = _tables(engine)
    with engine.begin() as conn:
        for table in tables.values():
            if conn.execute(sa.select(sa.func.count()).select_from(
                    table)).scalar():
                # Filled by its revision (0012's first generation).
                continue
            conn.execute(table.insert().values(
                {c.name: _value(c) for c in table.columns}))
    return _contents(engine, tables)


def _contents(engine, tables):
    with engine.connect() as conn:
        return {name: [dict(r._mapping) for r in conn.execute(
                    sa.select(table))]
                for name, table in tables.items()}


def _schema(engine):
    """Tables, with their columns and indexes, by name."""
    inspector = sa.inspect(engine)
    return {table: (sorted(c['name'] for c in inspector.get_columns(table)),
                    sorted(i['name'] for i in inspector.get_indexes(table)))
            for table in inspector.get_table_names()}


class _Statements(fixtures.Fixture):
    """Records the statements run on ``engine``, and fails one of them."""

    _WRITES = ('CREATE', 'ALTER', 'INSERT', 'UPDATE', 'DELETE', 'DROP')

    def __init__(self, engine, fail_at=None):
        super().__init__()
        self.engine = engine
        self.fail_at = fail_at
        self.writes = []

    def _setUp(self):
        sa.event.listen(self.engine, 'before_cursor_execute', self._seen)
        self.addCleanup(sa.event.remove, self.engine,
                        'before_cursor_execute', self._seen)

    def _seen(self, conn, cursor, statement, parameters, context,
              executemany):
        if not statement.lstrip().upper().startswith(self._WRITES):
            return
        if len(self.writes) == self.fail_at:
            raise Forced('forced failure at: %s' % statement)
        self.writes.append(statement)


class _Upgrades(object):

    def setUp(self):
        super().setUp()
        self.conf = self.useFixture(config_fixture.Config(CONF))
        self.addCleanup(db.reset)
        self.revisions = migration.revisions()

    def new_database(self):
        """An SQLAlchemy URL to an empty database."""
        raise NotImplementedError()

    def _index(self, revision):
        """A new index at ``revision`` (None: empty) and its engine."""
        db.reset()
        self.conf.config(connection=self.new_database(),
                         group='nova_ext_index')
        if revision is not None:
            migration.db_sync(CONF, revision)
        return db.get_engine(CONF)

    def _head_schema(self):
        if not hasattr(self, '_head'):
            self._head = _schema(self._index('head'))
        return self._head

    def _previous(self, revision):
        at = self.revisions.index(revision)
        return self.revisions[at - 1] if at else None

    def assertKept(self, before, engine, ignore=()):
        """Every row is still there, each column as it was."""
        after = _contents(engine, _tables(engine))
        columns = {table: {c['name'] for c in
                           sa.inspect(engine).get_columns(table)}
                   for table in after}
        for table, rows in before.items():
            for row in rows:
                # Not the columns a later revision dropped.
                row = {k: v for k, v in row.items()
                       if (table, k) not in ignore and k in columns[table]}
                self.assertIn(row, [{k: r[k] for k in row}
                                    for r in after[table]], table)

    def assertAtHead(self, engine, before, start):
        self.assertEqual(migration.head(), migration.current(CONF))
        self.assertEqual(self._head_schema(), _schema(engine))
        if not before:
            return
        # 0003 marks every instance indexed before it as of the epoch, those
        # already marked too; later revisions keep the mark as it is.
        remarked = self.revisions.index(start) < self.revisions.index('0003')
        first_event = ('nova_ext_index_pending', 'first_event_at')
        self.assertKept(before, engine, ignore={first_event})
        with engine.connect() as conn:
            self.assertEqual(0.0 if remarked else 5.0, conn.scalar(sa.text(
                'SELECT first_event_at FROM nova_ext_index_pending '
                'WHERE uuid = :u'), {'u': INSTANCE}))

    def test_from_every_revision(self):
        head = self._head_schema()
        for start in [None] + self.revisions[:-1]:
            engine = self._index(start)
            before = _fill(engine) if start else {}
            self.assertEqual(start is not None, bool(before), start)
            migration.db_sync(CONF)
            self.assertAtHead(engine, before, start)
        self.assertEqual(head, self._head_schema())

    def test_a_revision_failing_halfway_then_run_again(self):
        for revision in self.revisions:
            # Which statements the revision runs, on a database of its own.
            previous = self._previous(revision)
            engine = self._index(previous)
            before = _fill(engine) if previous else {}
            with _Statements(engine) as statements:
                migration.db_sync(CONF, revision)
            self.assertTrue(statements.writes, revision)
            # The same again, failing in the middle (with one statement and
            # the version stamp: at the stamp, after the statement ran).
            halfway = len(statements.writes) // 2
            engine = self._index(previous)
            before = _fill(engine) if previous else {}
            with _Statements(engine, fail_at=halfway):
                self.assertRaises(Forced, migration.db_sync, CONF)
            self.assertEqual(previous, migration.current(CONF), revision)
            migration.db_sync(CONF)
            self.assertAtHead(engine, before, previous)


class TestUpgradeOnSQLite(_Upgrades, oslotest_base.BaseTestCase):

    def new_database(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        return 'sqlite:///%s' % os.path.join(tmp, 'index.sqlite')


class TestUpgradeOnPostgreSQL(sqlserver.OnServer, _Upgrades,
                              oslotest_base.BaseTestCase):
    SERVER = sqlserver.PostgreSQL


class TestUpgradeOnMariaDB(sqlserver.OnServer, _Upgrades,
                           oslotest_base.BaseTestCase):
    SERVER = sqlserver.MariaDB
