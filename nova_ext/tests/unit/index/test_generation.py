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
"""The index's generation, on a real SQLite index (MariaDB and PostgreSQL:
nova_ext.tests.functional.test_index_backends)."""

import os
import types

import fixtures
from oslo_db import exception as db_exc
import sqlalchemy as sa

from nova_ext import direct_reads
from nova_ext.index.apply import source
from nova_ext.index.apply import writer
from nova_ext.index import db
from nova_ext.index import generation
from nova_ext.index.marks import pending
from nova_ext.index.marks import told
from nova_ext.index import schema
from nova_ext.index.upkeep import migration
from nova_ext.tests.unit import base as unit_base
from nova_ext.tests.unit.index import base


class TestChangesListed(unit_base.TestCase):

    def test_writes_to_listed_tables(self):
        for statement in (
                'INSERT INTO instances (uuid) VALUES (?)',
                'insert or replace into "instance_extra" values (1)',
                'INSERT IGNORE INTO `tags` (tag) VALUES (%s)',
                'REPLACE INTO instance_metadata VALUES (1)',
                '  UPDATE nova_ext_index_instances SET read_at = 1',
                'UPDATE OR IGNORE instances SET host = NULL',
                'DELETE FROM block_device_mapping WHERE id = 1',
                'WITH x AS (SELECT 1) DELETE FROM instances',
                'TRUNCATE instances'):
            self.assertTrue(generation.changes_listed(statement), statement)

    def test_reads_and_bookkeeping(self):
        for statement in (
                'SELECT * FROM instances FOR UPDATE',
                'select 1', 'PRAGMA busy_timeout = 0', 'BEGIN IMMEDIATE',
                'SET SESSION innodb_lock_wait_timeout = 3',
                'SAVEPOINT sa_1', 'COMMIT', '',
                'INSERT INTO nova_ext_index_pending (uuid) VALUES (?)',
                'DELETE FROM nova_ext_index_holds WHERE uuid = ?',
                'UPDATE nova_ext_index_generation SET generation = 1',
                'INSERT INTO nova_ext_index_sequence DEFAULT VALUES',
                'UPDATE nova_ext_index_metrics SET counts = ?'):
            self.assertFalse(generation.changes_listed(statement),
                             statement)


class TestGeneration(base.IndexDBTestCase):

    def now(self):
        return generation.read(self.engine, direct_reads.first)

    def _insert(self, conn, uuid='u-1'):
        conn.execute(sa.insert(source.INSTANCES).values(
            id=1, uuid=uuid, deleted=0))

    def test_a_new_index_has_one(self):
        number, token = self.now()
        self.assertEqual(0, number)
        self.assertEqual(36, len(token))

    def test_a_write_to_listed_rows_moves_it(self):
        before = self.now()
        db.write(self.engine, self._insert)
        after = self.now()
        self.assertEqual(before[0] + 1, after[0])
        self.assertNotEqual(before[1], after[1])
        db.write(self.engine, lambda conn: writer.delete_rows(conn, ['u-1']))
        self.assertEqual(after[0] + 1, self.now()[0])

    def test_marks_and_reads_do_not(self):
        before = self.now()
        pending.mark(self.engine, [('u-1', 1.0)])
        with db.begin_write(self.engine) as conn:
            conn.execute(sa.select(source.INSTANCES)).all()
        self.assertEqual(before, self.now())

    def test_notifications_recorded_with_marks_do_not(self):
        # Every list would read its page anew after each of them.
        before = self.now()
        top = pending.mark(self.engine, [('u-1', 1.0)], told=['m1', 'm2'])
        pending.mark_untold(self.engine, [('u-1', 2.0, 'm1')])
        db.write(self.engine,
                 lambda conn: told.prune(conn, top + told.KEEP + 1))
        self.assertEqual({}, base.told(self.engine))
        self.assertEqual(before, self.now())

    def test_every_table_no_list_reads_is_bookkeeping(self):
        # A table added to the index is either one a list reads (Nova's
        # copied tables, the index's own entry per instance) or
        # bookkeeping, whose writes must not move the generation.
        # security_group_rules: joined by Nova's query, and empty.
        listed = {t.name for t in source.tables()} | {
            'nova_ext_index_instances', 'security_group_rules'}
        found = set(sa.inspect(self.engine).get_table_names())
        self.assertEqual(set(), found - listed - generation.BOOKKEEPING)

    def test_a_read_that_finds_the_same_rows_does_not(self):
        cell = types.SimpleNamespace(uuid='cell', id=1)

        def read(ticket, vm_state):
            r = source.CellRead(cell, float(ticket), ticket)
            r.instances['u-1'] = {
                'id': 1, 'uuid': 'u-1', 'deleted': 0, 'hidden': False,
                'vm_state': vm_state, 'task_state': None,
                'updated_at': None, 'deleted_at': None}
            return r
        writer.apply(self.engine, read(1, 'active'), ['u-1'])
        written = self.now()
        # Checked again: only when, and by which read, in the book.
        writer.apply(self.engine, read(2, 'active'), ['u-1'])
        self.assertEqual(written, self.now())
        writer.apply(self.engine, read(3, 'stopped'), ['u-1'])
        self.assertEqual(written[0] + 1, self.now()[0])

    def test_a_transaction_rolled_back_does_not(self):
        before = self.now()

        def fail(conn):
            self._insert(conn)
            raise ValueError('rolled back')
        self.assertRaises(ValueError, db.write, self.engine, fail)
        self.assertEqual(before, self.now())
        # Nor does the next one, which writes nothing listed, on the same
        # pooled connection.
        pending.mark(self.engine, [('u-1', 1.0)])
        self.assertEqual(before, self.now())

    def test_an_index_made_again_has_another_token(self):
        first = self.now()
        tmp = self.useFixture(fixtures.TempDir()).path
        self.flags(connection='sqlite:///%s' % os.path.join(tmp, 'j.sqlite'),
                   group='nova_ext_index')
        migration.db_sync(self.conf.conf)
        other = generation.read(db.get_engine(self.conf.conf),
                                direct_reads.first)
        self.assertEqual(first[0], other[0])
        self.assertNotEqual(first[1], other[1])

    def test_unreadable_is_none(self):
        with self.engine.begin() as conn:
            conn.execute(sa.text('DROP TABLE nova_ext_index_generation'))
        self.assertIsNone(self.now())


class TestSettled(base.IndexDBTestCase):
    """Whether a change waits, and the generation, in one statement."""

    def now(self):
        return generation.read(self.engine, direct_reads.first)

    def settled(self):
        # As a list request reads it.
        return generation.settled(self.engine, direct_reads.first)

    def test_nothing_waiting(self):
        self.assertEqual((False, self.now()),
                         self.settled()[:2])

    def test_a_change_waits_until_its_mark_is_removed(self):
        before = self.now()
        pending.mark(self.engine, [('u-1', 1.0)])
        self.assertEqual((True, before), self.settled()[:2])
        # Applied: the generation moves; the mark goes after.
        db.write(self.engine, lambda conn: conn.execute(
            sa.insert(source.INSTANCES).values(id=1, uuid='u-1',
                                               deleted=0)))
        applied = self.now()
        self.assertEqual(before[0] + 1, applied[0])
        self.assertEqual((True, applied), self.settled()[:2])
        pending.unmark(self.engine, pending.take(self.engine, 1))
        self.assertEqual((False, applied), self.settled()[:2])

    def test_with_the_ticket_of_that_moment(self):
        number = pending.mark(self.engine, [('u-1', 1.0)])
        waiting, now, ticket = self.settled()
        self.assertEqual((True, self.now(), number), (waiting, now, ticket))
        self.assertEqual(base.ticket(self.engine), ticket)

    def test_no_generation_row(self):
        pending.mark(self.engine, [('u-1', 1.0)])
        with self.engine.begin() as conn:
            conn.execute(sa.delete(schema.GENERATION))
        self.assertEqual((True, None), self.settled()[:2])

    def test_what_the_database_refuses_is_raised(self):
        # As a take of the marks would: the request's catch-up makes it
        # the index's unavailability.
        with self.engine.begin() as conn:
            conn.execute(sa.text('DROP TABLE nova_ext_index_pending'))
        self.assertRaises((sa.exc.SQLAlchemyError, db_exc.DBError),
                          self.settled)


class TestChanges(base.IndexDBTestCase):
    """Which instances each move of the generation wrote."""

    def now(self):
        return generation.read(self.engine, direct_reads.first)

    def changes(self, since, now):
        return generation.changes(self.engine, since, now, direct_reads.rows)

    def write(self, uuid, named=True):
        def _write(conn):
            if named:
                generation.touched(conn, [uuid])
            conn.execute(sa.insert(source.INSTANCES).values(
                id=int(uuid[2:]) + 100, uuid=uuid, deleted=0))
        db.write(self.engine, _write)
        return self.now()

    def test_a_writer_names_the_instances_it_wrote(self):
        g0 = self.now()
        cell = types.SimpleNamespace(uuid='cell', id=1)
        read = source.CellRead(cell, 1.0, 1)
        for n, uuid in enumerate(('u-1', 'u-2')):
            read.instances[uuid] = {
                'id': n + 1, 'uuid': uuid, 'deleted': 0, 'hidden': False,
                'vm_state': 'active', 'task_state': None,
                'updated_at': None, 'deleted_at': None}
        writer.apply(self.engine, read, ['u-1', 'u-2'])
        g1 = self.now()
        self.assertEqual({'u-1', 'u-2'},
                         self.changes(g0, g1))
        db.write(self.engine, lambda conn: writer.delete_rows(conn, ['u-2']))
        g2 = self.now()
        self.assertEqual({'u-2'}, self.changes(g1, g2))
        self.assertEqual({'u-1', 'u-2'},
                         self.changes(g0, g2))
        self.assertEqual({'u-3'}, self.changes(
            g2, self.write('u-3')))

    def test_a_write_that_names_none_may_have_changed_anything(self):
        g0 = self.now()
        g1 = self.write('u-1', named=False)
        g2 = self.write('u-22')
        self.assertIsNone(self.changes(g0, g1))
        self.assertIsNone(self.changes(g0, g2))
        self.assertEqual({'u-22'}, self.changes(g1, g2))

    def test_only_later_generations_of_this_index_are_told(self):
        g0 = self.now()
        g1 = self.write('u-1')
        self.assertEqual({'u-1'}, self.changes(g0, g1))
        self.assertIsNone(self.changes(g1, g1))
        self.assertIsNone(self.changes(g1, g0))
        self.assertIsNone(self.changes(
            g0, (g0[0] + generation.KEPT + 1, g1[1])))
        # Pairs of another index (or of this one before a restore).
        self.assertIsNone(self.changes((g0[0], 'x'), g1))
        self.assertIsNone(self.changes(g0, (g1[0], 'x')))
        # A generation moved without its changes written: not told.
        with self.engine.begin() as conn:
            conn.execute(sa.text('DELETE FROM nova_ext_index_changes '
                                 'WHERE generation = %d' % g1[0]))
        self.assertIsNone(self.changes(g0, g1))

    def test_old_changes_are_dropped(self):
        table = 'nova_ext_index_changes'
        with self.engine.begin() as conn:
            conn.execute(sa.text(
                'UPDATE nova_ext_index_generation SET generation = %d'
                % (2 * generation.KEPT - 3)))
        before = self.write('u-0')
        old = self.write('u-1')
        self.assertEqual({'u-1'}, self.changes(before, old))
        with self.engine.begin() as conn:
            conn.execute(sa.text(
                "INSERT INTO %s (generation, token, uuid) VALUES "
                "(%d, 't', 'u-9')" % (table, generation.KEPT)))
        # The next is a multiple of the pruning interval: what is KEPT
        # generations older or more goes (the first generation's row too);
        # the rest stays.
        new = self.write('u-22')
        self.assertEqual(0, new[0] % 64)
        with self.engine.connect() as conn:
            kept = conn.execute(sa.text(
                'SELECT generation, uuid FROM %s ORDER BY generation'
                % table)).all()
        self.assertEqual([(before[0], 'u-0'), (old[0], 'u-1'),
                          (new[0], 'u-22')], [tuple(r) for r in kept])
