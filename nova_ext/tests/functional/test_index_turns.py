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
"""The turn to apply pending marks, on real MariaDB and PostgreSQL servers.

Held by another process (``GET_LOCK``, an advisory lock) on the index
engine nova-api uses; a server that stops gives no turn, and the caller
applies the marks on its own.
"""

import subprocess
import sys

from oslo_config import fixture as config_fixture
from oslotest import base as oslotest_base
import sqlalchemy as sa

from nova_ext import conf as ext_conf
from nova_ext.index.apply import turn
from nova_ext.index.marks import pending
from nova_ext.tests.functional import fixtures as ext_fixtures
from nova_ext.tests.functional import sqlserver
from nova_ext.tests.functional import test_index_locks
from nova_ext.tests.unit.index.apply import test_turn


class _Turns(sqlserver.OnServer, test_turn.TurnTests):

    def setUp(self):
        super().setUp()
        self.conf = self.useFixture(config_fixture.Config(ext_conf.CONF))
        index = self.useFixture(ext_fixtures.IndexFixture(
            self, connection=self.new_database()))
        self.engine = index.engine
        self.assertEqual(self.SERVER.DIALECT, self.engine.dialect.name)

    def flags(self, group=None, **kwargs):
        self.conf.config(group=group, **kwargs)

    def test_a_stopped_server_gives_none_and_raises_nothing(self):
        self.assertTrue(test_turn.had(self.engine, 1.0))
        self.sql_server.halt()
        try:
            self.assertFalse(test_turn.had(self.engine, 1.0))
        finally:
            self.sql_server.resume()
        # The first connection back from the pool may be one the halt
        # broke: given up on once (logged), then the turn is had again.
        self.assertTrue(test_turn.had(self.engine, 1.0) or
                        test_turn.had(self.engine, 1.0))

    def test_it_is_read_under_on_its_own_connection(self):
        # No checkout of the pool while the others wait.
        with turn.held(self.engine, 5.0) as held:
            self.assertTrue(held.had)
            with held.reading() as conn:
                self.assertTrue(self.holds_it(conn))

    def test_a_read_under_it_leaves_the_tables_to_another_writer(self):
        # The lock test_index_locks' outside writer takes (LOCK TABLES on
        # MariaDB; on PostgreSQL EXCLUSIVE, which reads share), taken in
        # another process while the turn is still held after a read.
        url = self.engine.url.render_as_string(hide_password=False)
        with turn.held(self.engine, 5.0) as held:
            self.assertTrue(held.had)
            with held.reading() as conn:
                pending.look(conn, 10, 0)
            took = subprocess.run(
                [sys.executable, '-c', test_index_locks._TAKE_LOCK, url,
                 str(test_index_locks.WAIT)],
                capture_output=True, text=True, timeout=60)
            self.assertEqual(0, took.returncode, took.stderr)
            with held.reading() as conn:
                self.assertTrue(self.holds_it(conn))

    def test_one_index_s_turn_leaves_another_s_free(self):
        # MySQL's lock names are the server's, not the database's.
        test_turn.OtherProcess(self, self.url())
        other_index = ext_fixtures.IndexFixture(
            self, connection=self.new_database())
        self.useFixture(other_index)
        self.assertTrue(test_turn.had(other_index.engine, 1.0))


class TestTurnsOnMariaDB(_Turns, oslotest_base.BaseTestCase):
    SERVER = sqlserver.MariaDB

    def holds_it(self, conn):
        return conn.execute(
            sa.text('SELECT IS_USED_LOCK(:name) = CONNECTION_ID()'),
            {'name': turn.mysql_name(self.engine.url.database)}).scalar()

    def questions(self, conn):
        """The statements the server was sent, by every session."""
        return int(conn.exec_driver_sql(
            "SHOW GLOBAL STATUS LIKE 'Questions'").fetchone()[1])

    def test_three_round_trips_the_lock_the_read_its_release(self):
        # No ping as the connection is taken, no commit after a
        # statement, no rollback as it is given back: autocommit.
        self.assertTrue(test_turn.had(self.engine, 1.0))
        counter = sa.create_engine(self.engine.url,
                                   isolation_level='AUTOCOMMIT')
        self.addCleanup(counter.dispose)
        with counter.connect() as conn:
            # What asking costs, the question itself.
            asking = -self.questions(conn) + self.questions(conn)
            before = self.questions(conn)
            with turn.held(self.engine, 5.0) as held:
                self.assertTrue(held.had)
                with held.reading() as read_on:
                    pending.look(read_on, 10, 0)
            self.assertEqual(3, self.questions(conn) - before - asking)

    def test_a_kept_connection_the_server_dropped_is_replaced(self):
        self.assertTrue(test_turn.had(self.engine, 1.0))
        self.sql_server.halt()
        self.sql_server.resume()
        # The kept connection fails its GET_LOCK; a new one has the turn.
        self.assertTrue(test_turn.had(self.engine, 1.0))


class TestTurnsOnPostgreSQL(_Turns, oslotest_base.BaseTestCase):
    SERVER = sqlserver.PostgreSQL

    def holds_it(self, conn):
        return 1 == conn.execute(sa.text(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
            "AND granted AND pid = pg_backend_pid()")).scalar()
