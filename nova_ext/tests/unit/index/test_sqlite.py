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
"""The SQLite index file: opened, never created, and followed on disk."""

import os
import sqlite3
import threading
import time

import fixtures
from oslo_db import exception as db_exc
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from nova_ext.index import db
from nova_ext.index import sqlite
from nova_ext.index.upkeep import migration
from nova_ext.tests.unit import base


class TestEngineUrl(base.TestCase):

    def test_file_opened_read_write_never_created(self):
        self.assertEqual(
            'sqlite:///file:/var/lib/a%20b/i.sqlite'
            '?mode=rw&timeout=0.1&uri=true',
            sqlite.engine_url('sqlite:////var/lib/a b/i.sqlite'))
        self.assertEqual('/var/lib/a b/i.sqlite', sqlite.path_of(
            sqlite.engine_url('sqlite:////var/lib/a b/i.sqlite')))

    def test_memory_and_uri_forms_are_kept(self):
        for url in ('sqlite://', 'sqlite:///:memory:',
                    'sqlite:///file:/x/i.sqlite?mode=ro&uri=true',
                    'mysql+pymysql://u:p@h/nova_ext_index?charset=utf8',
                    'postgresql+psycopg2://u:p@h/nova_ext_index'):
            self.assertEqual(url, sqlite.engine_url(url))
        self.assertIsNone(sqlite.path_of('sqlite://'))

    def test_only_sqlite_files_are_created(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        self.addCleanup(os.chdir, os.getcwd())
        os.chdir(tmp)
        sqlite.create_file('mysql+pymysql://u:p@h/idx_1')
        sqlite.create_file('sqlite://')
        self.assertEqual([], os.listdir(tmp))
        sqlite.create_file('sqlite:///idx_2')
        self.assertEqual(['idx_2'], os.listdir(tmp))


class _FileTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.path = os.path.join(self.dir, 'i.sqlite')
        self.flags(connection='sqlite:///%s' % self.path,
                   group='nova_ext_index')
        db.reset()
        self.addCleanup(db.reset)

    def count(self):
        with db.get_engine(self.conf.conf).connect() as conn:
            return conn.scalar(sa.text(
                'SELECT count(*) FROM nova_ext_index_pending'))


class TestFile(_FileTestCase):

    def test_a_missing_file_is_not_created(self):
        engine = db.get_engine(self.conf.conf)
        self.assertRaises(db_exc.DBNonExistentDatabase, engine.connect)
        self.assertFalse(os.path.exists(self.path))
        migration.db_sync(self.conf.conf)
        self.assertTrue(os.path.exists(self.path))
        self.assertEqual(0, self.count())

    def _mark(self):
        with db.begin_write(db.get_engine(self.conf.conf)) as conn:
            conn.execute(sa.text(
                "INSERT INTO nova_ext_index_pending (uuid, first_event_at, "
                "last_event_at, attempts) VALUES ('u', 1, 1, 0)"))

    def test_renamed_away_and_back(self):
        migration.db_sync(self.conf.conf)
        self._mark()
        away = self.path + '.away'
        os.rename(self.path, away)
        # The pooled connections still have the file open; they are not
        # used while it is not at its path.
        self.assertRaises(db_exc.DBNonExistentDatabase, self.count)
        self.assertFalse(os.path.exists(self.path))
        os.rename(away, self.path)
        self.assertEqual(1, self.count())

    def test_removed_then_made_again(self):
        migration.db_sync(self.conf.conf)
        self._mark()
        os.remove(self.path)
        self.assertRaises(db_exc.DBNonExistentDatabase, self.count)
        migration.db_sync(self.conf.conf)
        self.assertEqual(0, self.count())


class TestWriteLockWait(_FileTestCase):

    def setUp(self):
        super().setUp()
        migration.db_sync(self.conf.conf)
        self.engine = db.get_engine(self.conf.conf)
        # Released by a timer thread in one test.
        self.blocker = sqlite3.connect(self.path, isolation_level=None,
                                       check_same_thread=False)
        self.addCleanup(self.blocker.close)
        self.blocker.execute('BEGIN IMMEDIATE')

    def _sleeps(self, cooperative, timeout):
        """Times begin_write slept in Python while it waited."""
        slept = []
        real_sleep = time.sleep
        self.useFixture(fixtures.MonkeyPatch(
            'time.sleep', lambda s: slept.append(s) or real_sleep(s)))
        started = time.monotonic()
        self.assertRaises(sa_exc.OperationalError, self._write, cooperative,
                          timeout)
        return slept, time.monotonic() - started

    def _write(self, cooperative, timeout):
        with db.begin_write(self.engine, timeout, cooperative) as conn:
            conn.execute(sa.text('DELETE FROM nova_ext_index_pending'))

    def test_waits_by_sleeping_for_the_timeout(self):
        slept, took = self._sleeps(True, 0.3)
        slept = [s for s in slept if s]
        self.assertGreater(len(slept), 3)
        self.assertGreaterEqual(took, 0.3)
        self.assertLess(took, 1.0)

    def test_not_cooperative_waits_inside_sqlite(self):
        slept, took = self._sleeps(False, 0.3)
        self.assertEqual([], [s for s in slept if s])
        self.assertGreaterEqual(took, 0.3)
        self.assertLess(took, 1.0)

    def test_gets_the_lock_once_released(self):
        threading.Timer(0.2, self.blocker.execute, ('ROLLBACK',)).start()
        self._write(True, 5)
        self.assertEqual(0, self.count())
