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
"""Change capture over Nova's own models, marking a real index."""

import contextlib
import os
import sqlite3
import time

import fixtures
from nova.db.main import models
from oslo_db.sqlalchemy import orm as oslo_orm
import sqlalchemy as sa
from sqlalchemy import orm

from nova_ext.index import db
from nova_ext.index.marks import holders
from nova_ext.index.marks import pending
from nova_ext.index.marks import process
from nova_ext.index.marks import witness
from nova_ext.index import schema
from nova_ext.index.upkeep import migration
from nova_ext.seams import db_writes
from nova_ext.tests.unit import base

A = '00000000-0000-0000-0000-00000000000a'
B = '00000000-0000-0000-0000-00000000000b'
C = '00000000-0000-0000-0000-00000000000c'


class CaptureTestCase(base.TestCase):
    """A cell database (SQLite, Nova's models) and an index to mark."""

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        self.index_path = os.path.join(tmp, 'index.sqlite')
        self.flags(connection='sqlite:///%s' % self.index_path,
                   capture=True, capture_timeout=0.2,
                   group='nova_ext_index')
        db.reset()
        self.addCleanup(db.reset)
        self.addCleanup(process.reset)
        migration.db_sync(self.conf.conf)
        self.index = db.get_engine(self.conf.conf)
        self.cell = sa.create_engine('sqlite://')
        tables = [models.Instance.__table__,
                  models.InstanceInfoCache.__table__,
                  models.InstanceMetadata.__table__,
                  models.BlockDeviceMapping.__table__,
                  models.Tag.__table__, models.Migration.__table__]
        models.BASE.metadata.create_all(self.cell, tables=tables)
        # oslo.db's Session class, as Nova's enginefacade makes them.
        self.sessions = orm.sessionmaker(bind=self.cell,
                                         class_=oslo_orm.Session)
        self.assertTrue(db_writes.attach(self.conf.conf))
        self.addCleanup(db_writes.detach)
        with self.write() as session:
            for uuid in (A, B, C):
                session.add(models.Instance(uuid=uuid, deleted=0))
        self.forget()

    @contextlib.contextmanager
    def write(self):
        with self.sessions.begin() as session:
            yield session
        # The holds' releases, which the write does not wait for.
        self.assertTrue(process.get_batcher(self.conf.conf).flush(5))

    def marked(self):
        return set(pending.take(self.index, 100))

    def forget(self):
        pending.unmark(self.index, pending.take(self.index, 100))


class TestWhatIsCaptured(CaptureTestCase):

    def test_flushed_objects(self):
        with self.write() as session:
            session.add(models.InstanceInfoCache(instance_uuid=A,
                                                 network_info='[]'))
        self.assertEqual({A}, self.marked())
        self.forget()
        with self.write() as session:
            cache = session.query(models.InstanceInfoCache).one()
            cache.network_info = '[{"id": 1}]'
        self.assertEqual({A}, self.marked())
        self.forget()
        with self.write() as session:
            session.delete(session.query(models.InstanceInfoCache).one())
        self.assertEqual({A}, self.marked())

    def test_bulk_update_by_uuid(self):
        with self.write() as session:
            session.query(models.InstanceMetadata).filter_by(
                instance_uuid=B).update({'value': 'x'})
        self.assertEqual({B}, self.marked())
        with self.write() as session:
            session.query(models.Instance).filter(
                models.Instance.uuid.in_([A, C])).update({'vm_state': 'x'})
        self.assertEqual({A, B, C}, self.marked())

    def test_soft_delete_by_id_asks_the_database(self):
        with self.write() as session:
            session.add(models.BlockDeviceMapping(instance_uuid=C,
                                                  volume_id='v'))
        self.forget()
        with self.write() as session:
            query = session.query(models.BlockDeviceMapping).filter_by(id=1)
            # oslo.db's soft_delete, which Nova uses for most deletes.
            oslo_orm.Query.soft_delete(query)
        self.assertEqual({C}, self.marked())

    def test_or_criteria_are_asked_too(self):
        with self.write() as session:
            session.query(models.Instance).filter(sa.or_(
                models.Instance.uuid == A,
                models.Instance.id == 3)).update({'vm_state': 'x'})
        self.assertEqual({A, C}, self.marked())

    def test_a_write_of_every_row_marks_every_instance(self):
        # No WHERE clause: every row of the table, as the database has it.
        with self.write() as session:
            session.query(models.Instance).update({'vm_state': 'x'})
        self.assertEqual({A, B, C}, self.marked())
        self.forget()
        with self.write() as session:
            session.execute(sa.update(models.Instance.__table__).values(
                task_state=None))
        self.assertEqual({A, B, C}, self.marked())

    def test_core_insert_through_the_session(self):
        # Nova's instance_tag_set.
        with self.write() as session:
            session.execute(models.Tag.__table__.insert(),
                            [{'resource_id': A, 'tag': 't1'},
                             {'resource_id': B, 'tag': 't2'}])
        self.assertEqual({A, B}, self.marked())

    def test_insert_values(self):
        table = models.Tag.__table__
        with self.write() as session:
            session.execute(table.insert().values(resource_id=A, tag='t'))
        self.assertEqual({A}, self.marked())
        with self.write() as session:
            session.execute(table.insert().values(
                [{'resource_id': B, 'tag': 't'},
                 {'resource_id': C, 'tag': 't'}]))
        self.assertEqual({A, B, C}, self.marked())

    def test_rollback_releases(self):
        session = self.sessions()
        session.add(models.InstanceInfoCache(instance_uuid=A))
        session.flush()
        session.rollback()
        session.close()
        # Held while the row was there to read: one more re-read of A.
        self.assertTrue(process.get_batcher(self.conf.conf).flush(5))
        self.assertEqual({A}, self.marked())
        self.forget()
        self.assertEqual(set(), self.marked())

    def test_nothing_written_marks_nothing(self):
        session = self.sessions()
        session.add(models.InstanceInfoCache(instance_uuid=A))
        session.rollback()
        session.close()
        self.assertTrue(process.get_batcher(self.conf.conf).flush(5))
        self.assertEqual(set(), self.marked())

    def test_untracked_tables_mark_nothing(self):
        with self.write() as session:
            session.add(models.Migration(instance_uuid=A, status='x'))
        self.assertEqual(set(), self.marked())

    def test_detached_marks_nothing(self):
        db_writes.detach()
        with self.write() as session:
            session.query(models.Instance).filter_by(uuid=A).update(
                {'vm_state': 'x'})
        self.assertEqual(set(), self.marked())

    def test_off_by_default(self):
        db_writes.detach()
        self.flags(capture=False, group='nova_ext_index')
        self.assertFalse(db_writes.attach(self.conf.conf))


class TestHolds(CaptureTestCase):
    """A mark is held from before Nova's commit until after it."""

    def holds(self):
        """``{uuid: holds not released}`` of the index."""
        with self.index.connect() as conn:
            return dict(conn.execute(sa.select(
                schema.HOLDS.c.uuid, sa.func.count()).group_by(
                schema.HOLDS.c.uuid)).all())

    def listen(self, name, listener):
        """Run ``listener(session, ...)`` on the session event ``name``."""
        # Registered after capture's: runs after it.
        sa.event.listen(orm.Session, name, listener)
        self.addCleanup(sa.event.remove, orm.Session, name, listener)

    def before_commit(self, listener):
        self.listen('before_commit', listener)

    def test_marked_and_held_before_the_write(self):
        seen = []
        self.listen('before_flush', lambda session, *args: seen.append(
            ('flush', self.holds())))
        self.listen('do_orm_execute', lambda state: seen.append(
            ('execute', self.holds())) if state.is_update else None)
        with self.write() as session:
            session.add(models.InstanceInfoCache(instance_uuid=A))
        with self.write() as session:
            session.query(models.Instance).filter_by(uuid=B).update(
                {'vm_state': 'x'})
        self.assertEqual([('flush', {A: 1}), ('execute', {B: 1})], seen)
        self.assertEqual({}, self.holds())

    def test_held_once_per_transaction(self):
        seen = []
        self.before_commit(lambda session: seen.append(self.holds()))
        with self.write() as session:
            session.add(models.InstanceInfoCache(instance_uuid=A))
            session.flush()
            session.query(models.Instance).filter_by(uuid=A).update(
                {'vm_state': 'x'})
            session.add(models.InstanceMetadata(instance_uuid=A, key='k'))
        self.assertEqual([{A: 1}], seen)
        self.assertEqual({}, self.holds())

    def test_a_savepoint_does_not_release(self):
        seen = []
        with self.write() as session:
            with session.begin_nested():
                session.add(models.InstanceInfoCache(instance_uuid=A))
            nested = session.begin_nested()
            session.add(models.InstanceMetadata(instance_uuid=B, key='k'))
            session.flush()
            nested.rollback()
            process.get_batcher(self.conf.conf).flush(5)
            seen.append(self.holds())
        self.assertEqual([{A: 1, B: 1}], seen)
        self.assertEqual({}, self.holds())

    def test_a_read_before_the_commit_does_not_unmark(self):
        taken = {}

        def list_request(session):
            # A list request re-reads A now, before Nova's commit, and
            # would take its mark away.
            taken.update(pending.take(self.index, 10))
            pending.unmark(self.index, taken)
            self.assertEqual({A}, self.marked())
        self.before_commit(list_request)
        with self.write() as session:
            session.query(models.Instance).filter_by(uuid=A).update(
                {'vm_state': 'x'})
        # Released, and renewed: the read above is not enough.
        self.assertGreater(pending.take(self.index, 10)[A], taken[A])
        pending.unmark(self.index, taken)
        self.assertEqual({A}, self.marked())
        self.forget()
        self.assertEqual(set(), self.marked())

    def test_the_release_is_not_waited_for(self):
        process.reset()
        self.flags(notification_batch_timeout=60, group='nova_ext_index')
        with self.sessions.begin() as session:
            session.add(models.InstanceInfoCache(instance_uuid=A))
        # The write returned with its mark still held in the index: a list
        # request re-reads A (as committed now) and leaves the mark.
        self.assertEqual({A: 1}, self.holds())
        pending.unmark(self.index, pending.take(self.index, 10))
        self.assertEqual({A}, self.marked())
        # Not counted as a change this process has not recorded, which
        # would hand every list to Nova until the release is committed.
        self.assertEqual({}, process.held())
        self.assertTrue(process.get_batcher(self.conf.conf).flush(5))
        self.assertEqual({}, self.holds())
        self.forget()
        self.assertEqual(set(), self.marked())

    def test_a_release_not_recorded_yet_holds_the_next_write(self):
        process.reset()
        self.flags(notification_batch_timeout=60, group='nova_ext_index')
        for vm_state in ('x', 'y'):
            with self.sessions.begin() as session:
                session.query(models.Instance).filter_by(uuid=A).update(
                    {'vm_state': vm_state})
        # The second transaction kept the first one's hold: one index
        # write for both, the mark held throughout.
        self.assertEqual({A: 1}, self.holds())
        self.assertEqual({}, process.held())
        self.assertTrue(process.get_batcher(self.conf.conf).flush(5))
        self.assertEqual({}, self.holds())

    def test_a_failed_commit_releases(self):
        def fail(session):
            raise RuntimeError('the commit fails')
        self.before_commit(fail)
        session = self.sessions()
        session.add(models.InstanceInfoCache(instance_uuid=B))
        session.flush()
        self.assertEqual({B: 1}, self.holds())
        self.assertRaises(RuntimeError, session.commit)
        session.rollback()
        session.close()
        self.assertTrue(process.get_batcher(self.conf.conf).flush(5))
        self.assertEqual({}, self.holds())

    def test_the_holds_of_a_dead_holder_stop_counting(self):
        with self.write() as session:
            session.add(models.InstanceInfoCache(instance_uuid=C))
        # A writer that died between its hold and its release.
        with self.index.begin() as conn:
            conn.execute(sa.insert(schema.HOLDERS).values(
                holder='dead', host='h', pid=1, beats=7, started_at=0.0))
        pending.mark(self.index, [(C, time.time())], [(C, 'dead', 1)])
        taken = pending.take(self.index, 10)
        pending.unmark(self.index, taken)
        self.assertEqual({C}, self.marked())
        # Taken for dead at 7 beats: not if it beat meanwhile.
        self.assertIsNone(holders.release(self.index, 'dead', 6))
        self.assertEqual({C}, holders.release(self.index, 'dead', 7))
        self.assertEqual({}, self.holds())
        # Renewed: a read taken before the release does not remove it.
        pending.unmark(self.index, taken)
        self.assertEqual({C}, self.marked())
        pending.unmark(self.index, pending.take(self.index, 10))
        self.assertEqual(set(), self.marked())


def waited_for(reader, name):
    """The holders ``reader`` lists without; all, ``name`` too, if unread."""
    silent = reader.silent()
    return [name] if silent is None else silent


class TestUnwritableIndex(CaptureTestCase):
    """Nova's writes go on; the changes wait in memory, then land."""

    def test_locked_index_costs_one_timeout_and_loses_nothing(self):
        blocker = sqlite3.connect(self.index_path, isolation_level=None)
        blocker.execute('BEGIN IMMEDIATE')
        try:
            started = time.monotonic()
            with self.sessions.begin() as session:
                session.query(models.Instance).filter_by(uuid=A).update(
                    {'vm_state': 'x'})
            first = time.monotonic() - started
            started = time.monotonic()
            with self.sessions.begin() as session:
                session.query(models.Instance).filter_by(uuid=B).update(
                    {'vm_state': 'x'})
            second = time.monotonic() - started
            # The first write waited for capture_timeout, the second
            # not at all; both changes are held, not lost.
            self.assertGreaterEqual(first, 0.2)
            self.assertLess(second, 0.2)
            self.assertEqual({A, B}, set(process.held()))
        finally:
            blocker.execute('ROLLBACK')
            blocker.close()
        self.assertTrue(process.get_batcher(self.conf.conf).flush(15))
        self.assertEqual({}, process.held())
        self.assertEqual({A, B}, self.marked())

    def test_a_write_goes_on_once_no_reader_vouches_for_its_process(self):
        # A reader as another process has: it lists from the index only
        # while this process's holder beats lately.
        self.flags(holder_heartbeat_interval=0.5, group='nova_ext_index')
        reader = witness.Witness(self.conf.conf)
        reader.start()
        self.addCleanup(reader.stop)
        name = holders.get_lease(self.conf.conf).name
        deadline = time.monotonic() + 10
        while name in waited_for(reader, name):
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.01)
        blocker = sqlite3.connect(self.index_path, isolation_level=None)
        blocker.execute('BEGIN IMMEDIATE')
        try:
            with self.sessions.begin() as session:
                session.query(models.Instance).filter_by(uuid=A).update(
                    {'vm_state': 'x'})
            # Unrecorded, and no reader lists by the last beat any more.
            self.assertEqual({A}, set(process.held()))
            self.assertIn(name, waited_for(reader, name))
        finally:
            blocker.execute('ROLLBACK')
            blocker.close()
        self.assertTrue(process.get_batcher(self.conf.conf).flush(15))
        self.assertEqual({A}, self.marked())
        # Once recorded, it beats again.
        while name in waited_for(reader, name):
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.01)
