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
"""Faults of the index database under a running nova-api, with capture.

Each case breaks the index while the cloud works, then mends it. While it
is broken, a server is created and another deleted, and lists are asked:

- every list answer is Nova's own (compared with Nova's at that moment);
- the index is tried by at most one list request; then the driver is off,
  and the others are Nova's at once;
- Nova's writes do not wait for the broken index: once a hold (the mark a
  Nova transaction writes before it commits) has failed, no other fails
  until the marker records marks again;

and once it is mended, nothing is lost: the changes held meanwhile are
recorded, and the index serves Nova's answer again, those changes in it.
The harness runs under eventlet unless OS_NOVA_DISABLE_EVENTLET_PATCHING
says otherwise; there, a lock wait inside SQLite stalls the whole process.
"""

import os
import sqlite3
import time

import sqlalchemy as sa

from nova_ext import conf as ext_conf
from nova_ext.index import db
from nova_ext.index.marks import process
from nova_ext.index.upkeep import migration
from nova_ext.tests.functional import fixtures as ext_fixtures
from nova_ext.tests.functional import sqlserver
from nova_ext.tests.functional import test_index_backends as backends
from nova_ext.tests.functional import test_index_capture as capture_tests
from nova_ext.tests.functional import test_index_parity as parity

CONF = ext_conf.CONF
URIS = ('servers/detail?all_tenants=1', 'servers?all_tenants=1&deleted=true',
        'servers/detail')


class _Faults(capture_tests._CaptureBase):

    NOVA_EXT_OPTIONS = dict(
        parity.CACHED_OPTIONS,
        nova_ext_index=dict(capture_tests.CAPTURE, max_lag=5),
        nova_ext_instance_list=dict(
            parity.CACHED_OPTIONS['nova_ext_instance_list'],
            retry_interval=1))
    #: The stats of the list requests that tried the index and failed.
    TRIED = ('failed', 'unavailable', 'slow')

    def setUp(self):
        super().setUp()
        self.broken = False
        self.tried = 0
        self.marks = self.useFixture(ext_fixtures.MarkWrites(
            lambda: self.broken))
        self.hosts = ['compute1-1', 'compute2-1']
        self.servers = [self._create_server(host=host, networks='none')
                        for host in self.hosts]
        self.sync_index()
        self.now = [time.monotonic()]
        self.selector.clock = lambda: self.now[0]
        for _ in range(2):
            self.act()
            self.lists(served=True)

    def act(self):
        """Create a server and delete another."""
        body = self._build_server(networks='none',
                                  host=self.hosts[len(self.servers) % 2])
        server = self.admin_api.post_server({'server': body})
        self._wait_for_state_change(server, 'ACTIVE')
        victim = self.servers.pop(0)
        self.admin_api.delete_server(victim['id'])
        self._wait_until_deleted(victim)
        self.servers.append(server)

    def lists(self, served):
        for api in (self.admin_api, self.api):
            for uri in URIS:
                if 'all_tenants' in uri and api is self.api:
                    continue
                before = self.selector.stats.snapshot()
                got = self.assertSameAnswer(api, uri, served=served)
                self.assertEqual(200, got.status_code)
                after = self.selector.stats.snapshot()
                self.tried += sum(after[k] - before[k] for k in self.TRIED)

    def assertFaultHandled(self, break_it, mend_it):
        break_it()
        self.broken = True
        self.act()
        self.lists(served=False)
        # Tried once at most, then off: the other requests did not wait.
        self.assertLessEqual(self.tried, 1, self.selector.stats.snapshot())
        mend_it()
        mended = time.monotonic()
        self.broken = False
        # Nothing held back is lost: recorded, then served.
        self.assertTrue(process.get_batcher(CONF).flush(30))
        self.assertEqual({}, process.held())
        self.wait_for_vouches(since=mended)
        self.now[0] += 1.1
        self.lists(served=True)
        self.act()
        self.lists(served=True)
        # Nova wrote while the index was broken; its writes waited for the
        # index once at most, until the marker could record marks again.
        counts = self.marks.counts
        self.assertGreater(counts[(False, True, False)], 0, counts)
        self.assertLessEqual(self.marks.failed_holds(True),
                             self.marks.commits(True) + 1, counts)


class TestSQLiteFaults(_Faults):

    @property
    def path(self):
        return self.index.connection[len('sqlite:///'):]

    def test_file_removed(self):
        def mend():
            # What an operator does: make it again, and fill it.
            migration.db_sync(CONF)
            self.sync_index()
        self.assertFaultHandled(lambda: os.remove(self.path), mend)

    def test_file_renamed_away_and_back(self):
        away = self.path + '.away'
        self.assertFaultHandled(lambda: os.rename(self.path, away),
                                lambda: os.rename(away, self.path))

    def test_write_locked_by_another_writer(self):
        blocker = sqlite3.connect(self.path, isolation_level=None)
        self.addCleanup(blocker.close)
        self.assertFaultHandled(
            lambda: blocker.execute('BEGIN IMMEDIATE'),
            lambda: blocker.execute('ROLLBACK'))

    def test_exclusively_locked(self):
        # Only a connection alone on the file can lock it exclusively (WAL
        # readers keep a shared lock): as a backup tool started while
        # nova-api had nothing open. Then nothing can read it either.
        # A short busy timeout: under eventlet, SQLite's wait for a lock
        # stalls every greenthread, the one whose connection holds it too.
        blocker = sqlite3.connect(self.path, isolation_level=None,
                                  timeout=0.1)
        self.addCleanup(blocker.close)

        def lock():
            blocker.execute('PRAGMA locking_mode = EXCLUSIVE')
            deadline = time.monotonic() + 30
            while True:
                for in_transaction in (False, True):
                    db.get_engine(CONF, in_transaction).dispose()
                try:
                    blocker.execute('BEGIN EXCLUSIVE')
                    return
                except sqlite3.OperationalError:
                    # A connection out of the pool at the disposal (a
                    # heartbeat's, a reader's) keeps the file open until
                    # it is back; as a backup tool would, try again.
                    self.assertLess(time.monotonic(), deadline)
                    time.sleep(0.05)

        def unlock():
            blocker.execute('COMMIT')
            blocker.close()
        self.assertFaultHandled(lock, unlock)


class _ServerFaults(object):
    """The index on an SQL server: stopped, or a table locked."""

    #: The statements that lock the pending table, and that unlock it.
    LOCK = UNLOCK = ()

    def test_server_stopped_and_restarted(self):
        self.assertFaultHandled(self.sql_server.halt, self.sql_server.resume)

    def test_table_locked_by_another_writer(self):
        engine = sa.create_engine(self.index.connection,
                                  poolclass=sa.pool.NullPool)
        self.addCleanup(engine.dispose)
        blocker = engine.connect()
        self.addCleanup(blocker.close)

        def run(statements):
            for statement in statements:
                blocker.exec_driver_sql(statement)

        self.assertFaultHandled(lambda: run(self.LOCK),
                                lambda: run(self.UNLOCK))


class TestMariaDBFaults(_ServerFaults, backends._HarnessIndex, _Faults):
    SERVER = sqlserver.MariaDB
    LOCK = ('LOCK TABLES nova_ext_index_pending WRITE',)
    UNLOCK = ('UNLOCK TABLES',)


class TestPostgreSQLFaults(_ServerFaults, backends._HarnessIndex, _Faults):
    SERVER = sqlserver.PostgreSQL
    LOCK = ('BEGIN',
            'LOCK TABLE nova_ext_index_pending IN ACCESS EXCLUSIVE MODE')
    UNLOCK = ('ROLLBACK',)
