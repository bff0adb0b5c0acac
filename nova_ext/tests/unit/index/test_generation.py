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
import sqlalchemy as sa

from nova_ext.index.apply import source
from nova_ext.index.apply import writer
from nova_ext.index import db
from nova_ext.index import generation
from nova_ext.index.marks import pending
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
        return generation.read(self.engine)

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
        other = generation.read(db.get_engine(self.conf.conf))
        self.assertEqual(first[0], other[0])
        self.assertNotEqual(first[1], other[1])

    def test_unreadable_is_none(self):
        with self.engine.begin() as conn:
            conn.execute(sa.text('DROP TABLE nova_ext_index_generation'))
        self.assertIsNone(self.now())
