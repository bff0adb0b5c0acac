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
"""The index on real PostgreSQL and MariaDB servers: same answers as Nova.

The cells stay on the harness's SQLite databases; only the index moves,
as in a deployment whose index lives on the operator's database cluster.
Each test class starts its own server (see sqlserver.py) and each test gets
an empty database, which the index's own migration fills. Every test of
test_index_parity.TestIndexParity runs on each backend (but the one that
walks the microversions: the backend changes the query, not the
rendering), and so does the notification lifecycle.

Where a backend answers differently from SQLite by nature, so does Nova on
that backend, and the index follows its backend:

- NULLs sort first ascending on MariaDB (as on SQLite), last on
  PostgreSQL. Nova's merge of the cells cannot order NULLs at all (see
  test_index_parity.NOVA_500_SORTS), so sorts on a column with NULLs are
  recorded, not compared, as on SQLite; the order the index gives instead
  is checked to be its backend's.
- PostgreSQL's regular expression operator is not SQLite's, and Nova
  picks its operator from its own ``[database]connection``: the index
  hands those queries to Nova (and the test checks it says why). With
  Nova configured for PostgreSQL, the index runs them itself; that is
  compared with Nova's SQLite answer for patterns both read alike.
- MariaDB compares strings by the tables' collation; the index's tables
  have Nova's character set (``utf8``, case- and accent-insensitive
  general collation), so name filters and sorts agree with Nova's own
  tables on the same server, not with SQLite's byte comparisons
  (``name=SRV-ACTIVE1`` finds srv-active1 on MariaDB only). So the index
  hands regular expression filters to Nova unless Nova's own
  ``[database]connection`` is MariaDB too, where it runs them (the test
  checks both). The population's names differ in more than case and
  accents, so sorts give the same answers. PostgreSQL's cluster has the C
  locale for the same reason (see sqlserver.PostgreSQL).

Without the server binaries the classes fail, naming tools/test-packages:
CI installs them, so a missing server is a broken environment, not a
reason to skip.
"""

import datetime
import hashlib
import threading
import time
from unittest import mock
import urllib.parse
import uuid

import fixtures
from nova import context as nova_context
from nova.db.api import api as api_db_api
from nova.db.api import models as api_models
from nova.db.main import models as nova_models
from oslo_config import fixture as config_fixture
from oslo_db.sqlalchemy import enginefacade
from oslo_db.sqlalchemy import test_fixtures as db_fixtures
from oslo_serialization import jsonutils
from oslotest import base as oslotest_base
import sqlalchemy as sa
from sqlalchemy import orm

from nova_ext.cell0_rebuild import build_captures
from nova_ext.cell0_rebuild import migration as cell0_migration
from nova_ext.cell0_rebuild import models as cell0_models
from nova_ext import conf as ext_conf
from nova_ext import direct_reads
from nova_ext.index.apply import source
from nova_ext.index.apply import writer
from nova_ext.index import db
from nova_ext.index.feeds import service_changes
from nova_ext.index import generation
from nova_ext.index.marks import pending
from nova_ext.index.marks import sequence
from nova_ext.index.marks import told
from nova_ext.index.marks import upsert
from nova_ext.index import schema
from nova_ext.index.upkeep import migration as index_migration
from nova_ext.seams import api as api_entry_point
from nova_ext.seams.internals import api_db
from nova_ext.seams.internals import request_specs as stored_specs
from nova_ext.tests.functional import fixtures as ext_fixtures
from nova_ext.tests.functional import sqlserver
from nova_ext.tests.functional import test_index_locks
from nova_ext.tests.functional import test_index_parity
from nova_ext.tests.unit.index import base as index_base

CELL0 = build_captures.CELL0_UUID

#: Query parameters that Nova filters with a regular expression.
REGEX_FILTERS = ('name=', 'node=', 'hostname=', 'key_name=',
                 'reservation_id=', 'launch_index=', 'availability_zone=',
                 'power_state=', 'kernel_id=', 'ramdisk_id=')

#: A name outside latin1 (MariaDB's own default character set), inside
#: the Basic Multilingual Plane (Nova's MySQL tables are 3-byte utf8).
UNICODE_PART = '\u540d\u524d'
UNICODE_NAME = 'srv-stopped1-\u00fcn\u00efc\u00f8d\u00e9-' + UNICODE_PART

#: Regular expression filters that PostgreSQL's ``~`` and Python's ``re``
#: (Nova's REGEXP on SQLite) read alike, on columns ``~`` applies to.
POSTGRESQL_REGEX = ('name=srv-a', 'name=%5Esrv-(locked|other)2%24',
                    'name=nomatch', 'node=compute2', 'hostname=srv',
                    'availability_zone=nova', 'name=.*1%24&status=ACTIVE',
                    'name=' + urllib.parse.quote(UNICODE_PART))


class _OnServer(sqlserver.OnServer):

    def use_index(self):
        return self.useFixture(ext_fixtures.IndexFixture(
            self, connection=self.new_database()))


class _Schema(_OnServer):
    """The migration builds Nova's tables on the backend, and sound ones."""

    def setUp(self):
        super().setUp()
        self.conf = self.useFixture(config_fixture.Config(ext_conf.CONF))
        self.index = self.use_index()
        self.inspector = sa.inspect(self.index.engine)

    def flags(self, group=None, **kwargs):
        self.conf.config(group=group, **kwargs)

    def test_migration_creates_every_column_of_novas_tables(self):
        self.assertEqual(self.SERVER.DIALECT, self.index.engine.dialect.name)
        self.assertEqual(index_migration.head(),
                         index_migration.current(ext_conf.CONF))
        # A second run has nothing to do.
        index_migration.db_sync(ext_conf.CONF)
        have = set(self.inspector.get_table_names())
        self.assertEqual(set(), {t.name for t in source.tables()} - have)
        nova_tables = nova_models.BASE.metadata.tables
        for table in source.tables():
            self.assertEqual(
                set(table.c.keys()),
                {c['name'] for c in self.inspector.get_columns(table.name)},
                table.name)
        for name in sorted(have & set(nova_tables)):
            columns = {c['name']: c for c in self.inspector.get_columns(name)}
            # Fails when Nova adds (or drops) a column: the index must
            # follow, or Nova's queries over it break.
            self.assertEqual(sorted(c.name for c in nova_tables[name].c),
                             sorted(columns), name)
            for column in nova_tables[name].c:
                if isinstance(column.type, sa.DateTime):
                    self.assertSubsecond(columns[column.name]['type'],
                                         '%s.%s' % (name, column.name))
        for name in ('id', 'deleted'):
            # The index's instance ids are 64-bit (nova_ext.index.ids).
            self.assertIsInstance(self._type('instances', name),
                                  sa.BigInteger, name)

    def _type(self, table, column):
        return {c['name']: c['type']
                for c in self.inspector.get_columns(table)}[column]

    def assertSubsecond(self, reflected, what):
        # MySQL's DATETIME drops microseconds unless given a precision;
        # changes-since and updated_at sorts compare them.
        precision = getattr(reflected, 'fsp',
                            getattr(reflected, 'precision', None))
        if precision is None:
            # The backend's default: none on MySQL, 6 on PostgreSQL.
            precision = 0 if self.SERVER.DIALECT == 'mysql' else 6
        self.assertEqual(6, precision, what)

    def test_epoch_times_keep_subsecond_precision(self):
        # Status shows the age of the pending table's oldest mark.
        for table in self.inspector.get_table_names():
            for column in self.inspector.get_columns(table):
                if isinstance(column['type'], sa.Float):
                    self.assertIsInstance(column['type'], sa.Double,
                                          '%s.%s' % (table, column['name']))
        now = time.time()
        pending.mark(self.index.engine, [('u1', now)])
        with self.index.engine.connect() as conn:
            last = conn.execute(sa.select(
                schema.PENDING.c.last_event_at)).scalar()
        self.assertAlmostEqual(now, last, delta=0.001)
        self.assertLess(
            pending.oldest_age(self.index.engine, now=now + 1), 1.001)

    def test_holds_are_rows_each_recorded_once(self):
        # One row is sent as a statement compiled once, several as
        # SQLAlchemy's multi-row statement: both merge alike, and a batch
        # recorded again records its holds and releases once.
        engine = self.index.engine
        with engine.begin() as conn:
            conn.execute(sa.insert(schema.HOLDERS).values(
                holder='h', host='x', pid=1, beats=0, started_at=0.0))
        for _ in range(2):
            pending.mark(engine, {'a': (1.0, 1.0)}, [('a', 'h', 1)])
        pending.mark(engine, {'a': (0.5, 2.0), 'b': (2.0, 2.0)},
                     [('a', 'h', 2), ('b', 'h', 2)])
        c, h = schema.PENDING.c, schema.HOLDS.c
        with engine.connect() as conn:
            got = {r[0]: tuple(r[1:]) for r in conn.execute(sa.select(
                c.uuid, c.first_event_at, c.last_event_at))}
            held = sorted(tuple(r) for r in conn.execute(
                sa.select(h.uuid, h.holder, h.token)))
        self.assertEqual({'a': (0.5, 2.0), 'b': (2.0, 2.0)}, got)
        self.assertEqual([('a', 'h', 1), ('a', 'h', 2), ('b', 'h', 2)], held)
        # Held, the marks stay; released (twice), a read removes a's.
        pending.unmark(engine, pending.take(engine, 10))
        for _ in range(2):
            pending.mark(engine, {'a': (3.0, 3.0)}, (),
                         [('a', 'h', 1), ('a', 'h', 2)])
        pending.unmark(engine, pending.take(engine, 10))
        with engine.connect() as conn:
            self.assertEqual(['b'], [r[0] for r in conn.execute(
                sa.select(c.uuid))])

    def test_notifications_recorded_with_their_marks(self):
        # One id and several, each batch recorded twice (a retry after a
        # commit whose answer was lost): one row each, with the number of
        # the first; found, forgotten, and pruned by number.
        engine = self.index.engine
        first = [pending.mark(engine, {'a': (1.0, 1.0)}, told=['m1'])
                 for _ in range(2)][0]
        second = [pending.mark(engine, {'a': (2.0, 2.0), 'b': (2.0, 2.0)},
                               told=['m2', 'm3', 'm1'])
                  for _ in range(2)][0]
        c = schema.TOLD.c
        with engine.connect() as conn:
            got = dict(conn.execute(sa.select(c.message_id, c.seq)).all())
            found = told.found(conn, ['m1', 'm2', 'm4'])
        self.assertEqual({'m1': first, 'm2': second, 'm3': second}, got)
        self.assertEqual({'m1', 'm2'}, found)
        db.write(engine, lambda conn: told.forget(conn, found))
        self.useFixture(fixtures.MockPatchObject(told, 'KEEP', 0))
        self.assertEqual(0, db.write(
            engine, lambda conn: told.prune(conn, second)))
        self.assertEqual(1, db.write(
            engine, lambda conn: told.prune(conn, second + 1)))
        with engine.connect() as conn:
            self.assertEqual([], conn.execute(sa.select(c.message_id)).all())

    def test_marks_racing_for_one_instance(self):
        # Another process (an engine of its own) marks the instance just
        # before this mark writes: the mark is one upsert, so it meets the
        # other's row and merges into it (the earliest first event, the
        # latest last one) without a duplicate-key error to retry.
        other = sa.create_engine(self.index.engine.url)
        self.addCleanup(other.dispose)
        raced, raised = [], []

        def race(conn, cursor, statement, parameters, context, many):
            if not raced and statement.startswith(
                    'INSERT INTO nova_ext_index_pending '):
                raced.append(statement)
                pending.mark(other, [('u1', 5.0)])
        sa.event.listen(self.index.engine, 'before_cursor_execute', race)
        self.addCleanup(sa.event.remove, self.index.engine,
                        'before_cursor_execute', race)
        real = upsert.merge

        def recording(conn, latest):
            try:
                return real(conn, latest)
            except Exception as e:
                raised.append(type(e))
                raise
        self.useFixture(fixtures.MockPatchObject(upsert, 'merge',
                                                 side_effect=recording))
        pending.mark(self.index.engine, [('u1', 10.0)])
        self.assertEqual([], raised)
        self.assertEqual(1, len(raced))
        c = schema.PENDING.c
        with self.index.engine.connect() as conn:
            got = conn.execute(sa.select(c.uuid, c.last_event_at,
                                         c.seq)).all()
        self.assertEqual([('u1', 10.0)], [tuple(r[:2]) for r in got])
        self.assertEqual(
            95.0, pending.oldest_age(self.index.engine, now=100.0))
        # Each mark took a number of its own; the row has the last
        # writer's, which no reader could have taken before.
        self.assertEqual(2, index_base.ticket(self.index.engine))
        self.assertIn(got[0].seq, (1, 2))

    def test_writers_racing_for_one_instance(self):
        # Two processes apply reads of one instance at once: the later read
        # (the higher ticket) is applied while the earlier one is between
        # reading the book and writing. The index must end with the later
        # read's row whole, not the earlier read's changed columns over it
        # (vm_state active from one read, task_state networking from the
        # other: a state the cell never had).
        engine = self.index.engine
        cell = mock.Mock(uuid='cell', id=1)
        server = str(uuid.uuid4())
        at = datetime.datetime(2026, 11, 29, 0, 20, 40)

        def read(ticket, vm_state, task_state):
            r = source.CellRead(cell, float(ticket), ticket)
            r.instances[server] = {
                'id': 1, 'uuid': server, 'deleted': 0, 'hidden': False,
                'vm_state': vm_state, 'task_state': task_state,
                'updated_at': at, 'deleted_at': None}
            return r
        writer.apply(engine, read(1, 'building', 'scheduling'), [server])
        other = sa.create_engine(engine.url)
        self.addCleanup(other.dispose)
        later = threading.Thread(target=writer.apply, args=(
            other, read(3, 'active', None), [server]))
        real = writer._book

        def book_then_race(conn, uuids):
            held = real(conn, uuids)
            if conn.engine is engine and not later.is_alive():
                later.start()
                # Where the book is locked, the later writer waits for
                # this transaction; else it commits now.
                later.join(2)
            return held
        self.useFixture(fixtures.MockPatchObject(
            writer, '_book', side_effect=book_then_race))
        writer.apply(engine, read(2, 'building', 'networking'), [server])
        later.join(60)
        self.assertFalse(later.is_alive())
        c, book = source.INSTANCES.c, schema.INSTANCES.c
        with engine.connect() as conn:
            row = conn.execute(sa.select(c.vm_state, c.task_state).where(
                c.uuid == server)).one()
            ticket = conn.execute(sa.select(book.ticket).where(
                book.uuid == server)).scalar()
        self.assertEqual(('active', None), tuple(row))
        self.assertEqual(3, ticket)

    def test_the_sequence_orders_what_is_committed(self):
        engine = self.index.engine
        first = pending.mark(engine, [('a', 1.0)])
        self.assertEqual(first, index_base.ticket(engine))
        # A number taken in a transaction not committed yet is no ticket;
        # the next one taken is higher, whoever commits first.
        self.addCleanup(direct_reads.dispose)
        with engine.connect() as conn, conn.begin():
            pending_number = sequence.next_number(conn)
            later = pending.mark(engine, [('b', 2.0)])
            self.assertEqual(later, index_base.ticket(engine))
            # A read's ticket, taken on a connection of nova_ext's own:
            # the next number, committed when it is given.
            ticket = sequence.take(engine)
            self.assertEqual(ticket, index_base.ticket(engine))
        self.assertLess(first, pending_number)
        self.assertLess(pending_number, later)
        self.assertLess(later, ticket)
        with engine.begin() as conn:
            self.assertEqual(3, sequence.prune(conn))
        self.assertEqual(ticket, index_base.ticket(engine))
        self.assertGreater(sequence.take(engine), ticket)
        self.assertGreater(pending.mark(engine, [('c', 3.0)]), ticket)

    def test_the_generation_orders_what_is_committed(self):
        # A writer that moved the generation holds its row until it
        # commits: another writer waits for it, a reader sees neither its
        # rows nor its generation meanwhile, and the generations count the
        # commits in the order they were made.
        engine = self.index.engine
        other = sa.create_engine(engine.url)
        self.addCleanup(other.dispose)
        self.addCleanup(direct_reads.dispose)
        generation.watch(other)
        first = generation.read(engine, direct_reads.first)
        c = source.INSTANCES.c
        seen = {}

        def insert(uuid, id):
            return lambda conn: conn.execute(sa.insert(source.INSTANCES)
                                             .values(id=id, uuid=uuid,
                                                     deleted=0))
        later = threading.Thread(target=db.write, args=(other,
                                                        insert('b', 2)),
                                 kwargs={'timeout': 30})

        def moved(conn, cursor, statement, parameters, context, many):
            if (statement.startswith('UPDATE nova_ext_index_generation') and
                    not later.is_alive() and 'now' not in seen):
                later.start()
                later.join(2)
                seen['waited'] = later.is_alive()
                seen['now'] = generation.read(other, direct_reads.first)
                with other.connect() as reader:
                    seen['rows'] = reader.execute(
                        sa.select(sa.func.count()).select_from(
                            source.INSTANCES)).scalar()
        sa.event.listen(engine, 'after_cursor_execute', moved)
        self.addCleanup(sa.event.remove, engine, 'after_cursor_execute',
                        moved)
        db.write(engine, insert('a', 1))
        later.join(60)
        self.assertFalse(later.is_alive())
        self.assertEqual({'waited': True, 'now': first, 'rows': 0}, seen)
        last = generation.read(engine, direct_reads.first)
        self.assertEqual(first[0] + 2, last[0])
        self.assertNotEqual(first[1], last[1])
        with engine.connect() as conn:
            self.assertEqual(['a', 'b'], [r[0] for r in conn.execute(
                sa.select(c.uuid).order_by(c.id))])

    def test_marks_and_generation_read_as_committed_without_waiting(self):
        # A writer that applied a change and removed its mark holds the
        # generation's row until it commits: the list's one read of both,
        # on a connection of its own, neither waits for it nor sees half
        # of it.
        engine = self.index.engine
        self.addCleanup(direct_reads.dispose)
        pending.mark(engine, [('a', 1.0)])
        before = generation.read(engine, direct_reads.first)
        self.assertEqual((True, before),
                         generation.settled(engine, direct_reads.first)[:2])
        table = schema.GENERATION
        with engine.connect() as conn, conn.begin():
            conn.execute(sa.update(table).where(table.c.id == 1).values(
                generation=table.c.generation + 1))
            conn.execute(sa.delete(schema.PENDING))
            self.assertEqual(
                (True, before),
                generation.settled(engine, direct_reads.first)[:2])
            self.assertEqual(before,
                             generation.read(engine, direct_reads.first))
        after = generation.read(engine, direct_reads.first)
        self.assertEqual(before[0] + 1, after[0])
        self.assertEqual((False, after),
                         generation.settled(engine, direct_reads.first)[:2])
        self.assertEqual(after, generation.read(engine, direct_reads.first))

    def test_what_changed_between_generations_read_directly(self):
        # A page brought up to date reads which servers were written
        # between two generations in one statement of its own.
        engine = self.index.engine
        self.addCleanup(direct_reads.dispose)
        c = source.INSTANCES.c
        before = generation.read(engine, direct_reads.first)

        def write(uuid, id):
            def _write(conn):
                generation.touched(conn, [uuid])
                conn.execute(sa.insert(source.INSTANCES).values(
                    id=id, uuid=uuid, deleted=0))
            db.write(engine, _write)
        write('a', 1)
        between = generation.read(engine, direct_reads.first)
        write('b', 2)
        after = generation.read(engine, direct_reads.first)
        self.assertEqual((before[0] + 2, after[1]), after)
        for since, now, written in ((before, between, {'a'}),
                                    (before, after, {'a', 'b'}),
                                    (between, after, {'b'})):
            self.assertEqual(written, generation.changes(
                engine, since, now, direct_reads.rows))
        # Another state of the index: nothing can be told.
        self.assertIsNone(generation.changes(
            engine, (before[0], 'other'), after, direct_reads.rows))
        with engine.connect() as conn:
            self.assertEqual(['a', 'b'], [r[0] for r in conn.execute(
                sa.select(c.uuid).order_by(c.id))])

    def test_service_changes_racing_for_one_host(self):
        # Another process bumps a host this bump found missing, just before
        # its insert: the insert loses, the transaction runs again and
        # updates, and both bumps count.
        other = sa.create_engine(self.index.engine.url)
        self.addCleanup(other.dispose)
        raced = []

        def race(conn, cursor, statement, parameters, context, many):
            if not raced and statement.startswith(
                    'INSERT INTO nova_ext_index_service_changes '):
                raced.append(statement)
                service_changes.bump(other, ['h1'])
        sa.event.listen(self.index.engine, 'before_cursor_execute', race)
        self.addCleanup(sa.event.remove, self.index.engine,
                        'before_cursor_execute', race)
        service_changes.bump(self.index.engine, ['h1', 'h2'])
        self.assertEqual(1, len(raced))
        self.addCleanup(direct_reads.dispose)
        self.assertEqual({'h1': 2, 'h2': 1}, service_changes.generations(
            self.index.engine, ['h1', 'h2'], direct_reads.rows))

    def test_a_read_asks_the_related_tables_that_hold_rows(self):
        # Nova's cells run on these servers too; the index has their tables.
        # The instances' statement says which tables hold rows of each
        # (correlated EXISTS in its columns), whatever the backend.
        uuids = [str(uuid.uuid4()) for _ in range(2)]
        tags = nova_models.Tag.__table__
        with self.index.engine.begin() as conn:
            for n, server in enumerate(uuids, 1):
                conn.execute(sa.insert(source.INSTANCES).values(
                    id=n, uuid=server, deleted=0))
            conn.execute(sa.insert(tags).values(resource_id=uuids[0],
                                                tag='blue'))
        read = source.CellRead(mock.Mock(uuid='cell', id=1), 1.0, 1)
        with self.index.engine.connect() as conn:
            source.read_rows(conn.execute, read, uuids + ['gone'])
            rows = {row.uuid: dict(row._mapping) for row in conn.execute(
                sa.select(source.INSTANCES).where(
                    source.INSTANCES.c.uuid.in_(uuids)))}
        self.assertEqual(rows, read.instances)
        self.assertEqual({uuids[0]: [{'resource_id': uuids[0],
                                      'tag': 'blue'}]},
                         read.children['tags'])
        self.assertEqual({}, read.children['instance_faults'])
        self.assertEqual({}, read.security_groups)

    def test_unicode_names_round_trip(self):
        row = {'id': 1 << 40, 'uuid': str(uuid.uuid4()), 'deleted': 0,
               'display_name': UNICODE_NAME}
        with self.index.engine.begin() as conn:
            conn.execute(sa.insert(source.INSTANCES).values(row))
            got = conn.execute(sa.select(source.INSTANCES.c.display_name)
                               .where(source.INSTANCES.c.id == row['id']))
            self.assertEqual(UNICODE_NAME, got.scalar())


class _ApiDatabaseTables(_OnServer):
    """nova_ext's table in Nova's API database, on the backend."""

    def setUp(self):
        super().setUp()
        url = self.sql_server.create_database(
            'api_%s' % uuid.uuid4().hex[:12])
        self.engine = sa.create_engine(url)
        self.addCleanup(self.engine.dispose)
        # Nova's own API tables, as nova-manage api_db sync leaves them.
        api_models.BASE.metadata.create_all(self.engine)
        cell0_migration.db_sync(engine=self.engine)

    def test_captures_and_purge(self):
        self.assertEqual(cell0_migration.head(),
                         cell0_migration.current(engine=self.engine))
        captures = cell0_models.BuildCapture.__table__
        cells = api_models.CellMapping.__table__
        mappings = api_models.InstanceMapping.__table__
        now = datetime.datetime(2026, 11, 23, 4, 0, 0)
        with self.engine.begin() as conn:
            for n, cell_uuid in enumerate((CELL0, str(uuid.uuid4()))):
                conn.execute(cells.insert().values(
                    id=n + 1, uuid=cell_uuid, name='cell%d' % n,
                    transport_url='none:///', database_connection='x',
                    disabled=False))
            # buried (kept), built in a real cell, deleted, never mapped
            for uuid_, cell_id, qfd in (('a' * 32, 1, False),
                                        ('b' * 32, 2, False),
                                        ('c' * 32, 1, True),
                                        ('d' * 32, None, None)):
                if qfd is not None:
                    conn.execute(mappings.insert().values(
                        instance_uuid=uuid_, cell_id=cell_id,
                        project_id='p', queued_for_delete=qfd))
                conn.execute(captures.insert().values(
                    instance_uuid=uuid_, project_id='p',
                    requested_networks='{"x": "\u540d"}',
                    personality=False, created_at=now))
        # One capture per server (PostgreSQL aborts the transaction).
        with self.engine.begin() as conn:
            self.assertRaises(sa.exc.IntegrityError, conn.execute,
                              captures.insert().values(
                                  instance_uuid='a' * 32, project_id='p',
                                  personality=False, created_at=now))
        with orm.Session(self.engine) as session:
            orphans = build_captures._orphans(session, 10)
        with self.engine.connect() as conn:
            by_id = dict(conn.execute(sa.select(
                captures.c.id, captures.c.instance_uuid)).all())
            self.assertEqual('{"x": "\u540d"}', conn.execute(sa.select(
                captures.c.requested_networks)).scalars().first())
        self.assertEqual(['b' * 32, 'c' * 32, 'd' * 32],
                         sorted(by_id[i] for i in orphans))

    def test_request_specs_digested_as_their_stored_text(self):
        # The digest a page reads of each spec is the SHA-256 of its uuid
        # and stored text: any change, another. Combined by MariaDB, they
        # are what nova_ext combines of them.
        specs = api_models.RequestSpec.__table__
        # As Nova stores them: JSON, its non-ASCII characters escaped.
        texts = {'a' * 32: jsonutils.dumps({'az': 'az1'}),
                 'b' * 32: jsonutils.dumps({'az': '\u540d\u00fc',
                                            'hints': {}}),
                 'c' * 32: jsonutils.dumps({'az': 'az1'})}
        with self.engine.begin() as conn:
            for uuid_, text in texts.items():
                conn.execute(specs.insert().values(instance_uuid=uuid_,
                                                   spec=text))
        dialect = self.engine.dialect.name
        digest = stored_specs._digest(dialect, specs)
        self.assertIsNotNone(digest)
        with self.engine.connect() as conn:
            got = dict(conn.execute(sa.select(specs.c.instance_uuid,
                                              digest)).all())
        self.assertEqual(
            {u: hashlib.sha256((u + t).encode('utf-8')).hexdigest()
             for u, t in texts.items()}, got)
        pages = (['a' * 32, 'b' * 32, 'c' * 32], ['a' * 32, 'c' * 32],
                 ['b' * 32])
        for page in pages:
            size, params = stored_specs._asked(page)
            statement = stored_specs._combined_query(dialect, size)
            if dialect == 'postgresql':
                self.assertIsNone(statement)
                continue
            with self.engine.connect() as conn:
                rows, digested, first, second = conn.execute(
                    statement, params).one()
            self.assertEqual(
                stored_specs.combine([(u, got[u]) for u in page]),
                (rows, int(first), int(second)))
            self.assertEqual(len(page), digested)

    def test_specs_and_mappings_read_directly_as_nova_stores_them(self):
        # nova_ext's one-round-trip reads of Nova's API database (the
        # specs a refresh and a page read, the cells a refresh reads
        # from) on Nova's engine, configured for the server: five uuids
        # asked in an IN list padded to eight, two of them with nothing
        # stored, and what another connection commits read at once.
        facade = enginefacade.transaction_context()
        facade.configure(
            connection=self.engine.url.render_as_string(hide_password=False))
        self.useFixture(db_fixtures.ReplaceEngineFacadeFixture(
            api_db_api.context_manager, facade))
        self.addCleanup(direct_reads.dispose)
        ctx = nova_context.get_admin_context()
        specs = api_models.RequestSpec.__table__
        cells = api_models.CellMapping.__table__
        mappings = api_models.InstanceMapping.__table__
        a, b, c = 'a' * 32, 'b' * 32, 'c' * 32
        texts = {a: jsonutils.dumps({'az': 'az1'}),
                 c: jsonutils.dumps({'az': '\u540d'})}
        with self.engine.begin() as conn:
            for uuid_, text in texts.items():
                conn.execute(specs.insert().values(instance_uuid=uuid_,
                                                   spec=text))
            conn.execute(cells.insert().values(
                id=1, uuid=CELL0, name='cell0', transport_url='none:///',
                database_connection='x', disabled=False))
            conn.execute(mappings.insert().values(
                instance_uuid=a, cell_id=1, project_id='p',
                queued_for_delete=False))
            conn.execute(mappings.insert().values(
                instance_uuid=b, cell_id=None, project_id='p',
                queued_for_delete=False))
        asked = [a, b, c, 'd' * 32, 'e' * 32]

        def sha(uuid_):
            return hashlib.sha256(
                (uuid_ + texts[uuid_]).encode('utf-8')).hexdigest()
        self.assertEqual(texts, dict(stored_specs.stored(ctx, asked)))
        self.assertEqual({a: CELL0, b: None}, api_db.cells_of(asked))
        self.assertEqual({a: sha(a), c: sha(c)},
                         dict(stored_specs.digests(ctx, asked)))
        self.assertEqual(
            sorted((u, texts[u], sha(u)) for u in texts),
            sorted(stored_specs.stored_with_digests(ctx, asked)))
        combined = stored_specs.combined(ctx, asked)
        if self.engine.dialect.name == 'postgresql':
            self.assertIsNone(combined)
        else:
            self.assertEqual(stored_specs.combine(
                [(u, sha(u)) for u in texts]), combined)
        # Committed by another connection: read at once.
        texts[b] = jsonutils.dumps({'az': 'az2'})
        with self.engine.begin() as conn:
            conn.execute(specs.insert().values(instance_uuid=b,
                                               spec=texts[b]))
            conn.execute(mappings.update().where(
                mappings.c.instance_uuid == b).values(cell_id=1))
        self.assertEqual(texts, dict(stored_specs.stored(ctx, asked)))
        self.assertEqual({a: CELL0, b: CELL0}, api_db.cells_of(asked))
        if combined is not None:
            self.assertEqual(stored_specs.combine(
                [(u, sha(u)) for u in texts]),
                stored_specs.combined(ctx, asked))


class TestApiDatabaseTablesOnPostgreSQL(_ApiDatabaseTables,
                                        oslotest_base.BaseTestCase):
    SERVER = sqlserver.PostgreSQL


class TestApiDatabaseTablesOnMariaDB(_ApiDatabaseTables,
                                     oslotest_base.BaseTestCase):
    SERVER = sqlserver.MariaDB


class _HarnessIndex(_OnServer):
    """The index of a test_index_parity.IndexTestCase, on the server."""

    def _setup_services(self):
        self.index = self.use_index()
        self.build_request_ids = set()
        self.nova_500s = []
        self.null_sort_differences = []
        # IndexTestCase's own _setup_services would add a SQLite index;
        # skip to the one above it.
        super(test_index_parity.IndexTestCase, self)._setup_services()


class _Parity(_HarnessIndex):
    """test_index_parity.TestIndexParity, and the backend's own answers."""

    # Every microversion is covered on SQLite; the backend does not change
    # rendering, only the query.
    EVERY_MICROVERSION = False
    # Nor the callers or paths: a project's query only adds its project,
    # as the admin's without all_tenants does, and GET /servers runs the
    # query of GET /servers/detail. Every filter is still compared, for the
    # admin, with all_tenants and without.
    FILTER_CALLERS = ('admin_api',)
    FILTER_PATHS = ('servers/detail',)
    # The backend orders by type: a key of each, with NULLs and without.
    # SQLite compares every key.
    SORT_KEYS = test_index_parity.TYPED_SORT_KEYS

    def setUp(self):
        super().setUp()
        # Nova's tables store any BMP name; the index's must too. Every
        # listing compared below renders it.
        self.api.put_server(self.servers['stopped1']['id'],
                            {'server': {'name': UNICODE_NAME}})
        self.sync_index()

    def nova_answer(self, api, uri):
        """Nova's own answer to GET ``uri``, the index left out."""
        with api_entry_point.stock_instance_list():
            return self._get(api, uri)

    def index_answer(self, api, uri):
        """The index's answer to GET ``uri``, which it must serve."""
        before = self.selector.stats.snapshot()
        got = self._get(api, uri)
        after = self.selector.stats.snapshot()
        self.assertEqual(before['served'] + 1, after['served'],
                         '%s: %s' % (uri, after))
        return got

    def check_filters_by_role(self):
        super().check_filters_by_role()
        self.assertSameAnswer(
            self.admin_api, 'servers/detail?all_tenants=1&name=%s'
            % urllib.parse.quote(UNICODE_PART))
        self.check_backend_filters()

    def check_backend_filters(self):
        """Filters only this backend runs differently."""
        raise NotImplementedError()

    def check_sorts_markers_and_pages(self):
        super().check_sorts_markers_and_pages()
        # Where Nova cannot merge NULLs, the index answers in the order of
        # Nova's query on one cell of its backend: launched_at is NULL for
        # the server that never launched (error0).
        for direction in ('asc', 'desc'):
            got = self.assertSameAnswer(
                self.admin_api, 'servers/detail?all_tenants=1&'
                'sort_key=launched_at&sort_dir=%s' % direction,
                nova_500=True, null_sort=True)
            nulls = [s['OS-SRV-USG:launched_at'] is None
                     for s in got.json()['servers']]
            self.assertEqual({True, False}, set(nulls))
            first = self.SERVER.NULLS_FIRST == (direction == 'asc')
            self.assertEqual(sorted(nulls, reverse=first), nulls,
                             '%s: %s' % (direction, nulls))


class _HandsRegexToNova(object):
    """Regular expression filters go to Nova from a server index.

    The harness's cells are SQLite, so Nova writes and matches its regular
    expression filters as SQLite does; an index on another kind of
    database hands those queries to Nova, and says why.
    """

    def assertServed(self, served, before, after, got, context):
        if (served is None and got.status_code == 200 and
                after['unservable'] == before['unservable'] + 1 and
                'regular expression' in after['last_reason']):
            self.assertTrue(any(key in context for key in REGEX_FILTERS),
                            context)
            served = False
        super().assertServed(served, before, after, got, context)


class TestSchemaOnPostgreSQL(_Schema, oslotest_base.BaseTestCase):
    SERVER = sqlserver.PostgreSQL


class TestSchemaOnMariaDB(_Schema, oslotest_base.BaseTestCase):
    SERVER = sqlserver.MariaDB

    def test_tables_have_novas_character_set_and_engine(self):
        # alembic_version is alembic's (ASCII revision ids).
        for table in set(self.inspector.get_table_names()) - {
                'alembic_version'}:
            options = self.inspector.get_table_options(table)
            self.assertIn(options.get('mysql_default charset'),
                          ('utf8', 'utf8mb3'), table)
            self.assertEqual('InnoDB', options.get('mysql_engine'), table)


class TestIndexParityOnPostgreSQL(_HandsRegexToNova, _Parity,
                                  test_index_parity.TestIndexParity):
    SERVER = sqlserver.PostgreSQL

    def check_backend_filters(self):
        # Nova's answer over its SQLite cells, then the index's when Nova
        # is configured as on a PostgreSQL cloud, where the index runs the
        # filter with ``~`` itself.
        sqlite = ext_conf.CONF.database.connection
        empty = []
        for query in POSTGRESQL_REGEX:
            uri = 'servers/detail?all_tenants=1&' + query
            want = self.nova_answer(self.admin_api, uri)
            self.flags(connection='postgresql://', group='database')
            try:
                got = self.index_answer(self.admin_api, uri)
            finally:
                self.flags(connection=sqlite, group='database')
            self.assertEqual((want.status_code, want.text),
                             (got.status_code, got.text), uri)
            if not got.json()['servers']:
                empty.append(query)
        self.assertEqual(['name=nomatch'], empty)


class TestIndexParityOnMariaDB(_HandsRegexToNova, _Parity,
                               test_index_parity.TestIndexParity):
    SERVER = sqlserver.MariaDB

    def check_backend_filters(self):
        # Nova on SQLite and the index on MariaDB both write REGEXP, but
        # case is where they part: the index's collation ignores it, as
        # Nova's own tables on MariaDB do; SQLite's REGEXP (Python's re)
        # does not. So the index hands the filter to Nova, unless Nova is
        # configured as on a MariaDB cloud, where it matches as Nova would
        # there.
        uri = 'servers?all_tenants=1&name=SRV-ACTIVE1'
        got = self.assertSameAnswer(self.admin_api, uri, served=False)
        self.assertEqual([], got.json()['servers'])
        self.assertIn('regular expression',
                      self.selector.stats.snapshot()['last_reason'])
        sqlite = ext_conf.CONF.database.connection
        self.flags(connection='mysql+pymysql://', group='database')
        try:
            got = self.index_answer(self.admin_api, uri)
        finally:
            self.flags(connection=sqlite, group='database')
        self.assertEqual([self.servers['active1']['id']],
                         [s['id'] for s in got.json()['servers']])


class TestIndexFollowsNotificationsOnPostgreSQL(
        _HarnessIndex, test_index_parity.TestIndexFollowsNotifications):
    SERVER = sqlserver.PostgreSQL


class TestIndexFollowsNotificationsOnMariaDB(
        _HarnessIndex, test_index_parity.TestIndexFollowsNotifications):
    SERVER = sqlserver.MariaDB


class TestOutsideWriterOnPostgreSQL(
        _HarnessIndex, test_index_locks.TestOutsideWriterBesideConsumer):
    SERVER = sqlserver.PostgreSQL


class TestOutsideWriterOnMariaDB(
        _HarnessIndex, test_index_locks.TestOutsideWriterBesideConsumer):
    SERVER = sqlserver.MariaDB
