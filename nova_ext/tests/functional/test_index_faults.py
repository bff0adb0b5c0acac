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
- no list asked of nova_ext takes longer than ``query_timeout`` + 0.5 s;
- no create or delete takes longer than the slowest of its kind while the
  index was whole, + 0.5 s;

and once it is mended, nothing is lost: the changes held meanwhile are
recorded, and the index serves Nova's answer again, those changes in it.
The harness runs under eventlet unless OS_NOVA_DISABLE_EVENTLET_PATCHING
says otherwise; there, a lock wait inside SQLite stalls the whole process.
"""

import os
import sqlite3
import time

from nova import utils
import sqlalchemy as sa

from nova_ext import conf as ext_conf
from nova_ext.index import consumer
from nova_ext.index import db
from nova_ext.index import migration
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
    #: Seconds a fault may add to a create or a delete, and to
    #: query_timeout for a list.
    SLOWER_BY_AT_MOST = 0.5

    def setUp(self):
        super().setUp()
        self.hosts = ['compute1-1', 'compute2-1']
        self.servers = [self._create_server(host=host, networks='none')
                        for host in self.hosts]
        self.sync_index()
        self.now = [time.monotonic()]
        self.selector.clock = lambda: self.now[0]
        self.whole = {'create': [], 'delete': []}
        for _ in range(2):
            self.act(self.whole)
            self.lists(served=True)

    def _get(self, api, uri):
        started = time.monotonic()
        try:
            return super()._get(api, uri)
        finally:
            self.took = time.monotonic() - started

    def act(self, times):
        """Create a server and delete another, each timed into ``times``."""
        body = self._build_server(networks='none',
                                  host=self.hosts[len(self.servers) % 2])
        started = time.monotonic()
        server = self.admin_api.post_server({'server': body})
        times['create'].append(time.monotonic() - started)
        self._wait_for_state_change(server, 'ACTIVE')
        victim = self.servers.pop(0)
        started = time.monotonic()
        self.admin_api.delete_server(victim['id'])
        times['delete'].append(time.monotonic() - started)
        self._wait_until_deleted(victim)
        self.servers.append(server)

    def lists(self, served):
        for api in (self.admin_api, self.api):
            for uri in URIS:
                if 'all_tenants' in uri and api is self.api:
                    continue
                # The first GET is nova_ext's, the second Nova's.
                got = self.assertSameAnswer(api, uri, served=served)
                self.assertEqual(200, got.status_code)
                self.assertLessEqual(
                    self.took_index, CONF.nova_ext_index.query_timeout +
                    self.SLOWER_BY_AT_MOST, uri)

    def assertSameAnswer(self, api, uri, **kwargs):
        real_get = self._get
        took = []

        def first_get(api, uri):
            try:
                return real_get(api, uri)
            finally:
                took.append(self.took)
        self._get = first_get
        try:
            return super().assertSameAnswer(api, uri, **kwargs)
        finally:
            del self._get
            self.took_index = took[0]

    def assertFaultHandled(self, break_it, mend_it):
        break_it()
        broken = {'create': [], 'delete': []}
        self.act(broken)
        self.lists(served=False)
        mend_it()
        # Nothing held back is lost: recorded, then served.
        self.assertTrue(consumer.get_marker(CONF).flush(30))
        self.assertEqual({}, consumer.held())
        self.now[0] += 1.1
        self.lists(served=True)
        # Whole again: the times to compare with, before and after.
        self.act(self.whole)
        self.lists(served=True)
        for kind, times in broken.items():
            self.assertLessEqual(
                max(times), max(self.whole[kind]) + self.SLOWER_BY_AT_MOST,
                '%s while the index was broken; while whole: %s'
                % (kind, self.whole[kind]))


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
        blocker = sqlite3.connect(self.path, isolation_level=None)
        self.addCleanup(blocker.close)

        def lock():
            for in_transaction in (False, True):
                db.get_engine(CONF, in_transaction).dispose()
            blocker.execute('PRAGMA locking_mode = EXCLUSIVE')
            blocker.execute('BEGIN EXCLUSIVE')

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
    # MySQL counts lock waits in whole seconds: a hold waits one.
    SLOWER_BY_AT_MOST = 1.5


class TestPostgreSQLFaults(_ServerFaults, backends._HarnessIndex, _Faults):
    SERVER = sqlserver.PostgreSQL
    # psycopg2 is not green: under eventlet each wait of the index for a
    # lock (a hold's, then the recorder's retries) holds the whole process.
    SLOWER_BY_AT_MOST = (_Faults.SLOWER_BY_AT_MOST
                         if utils.concurrency_mode_threading() else 1.5)
    LOCK = ('BEGIN',
            'LOCK TABLE nova_ext_index_pending IN ACCESS EXCLUSIVE MODE')
    UNLOCK = ('ROLLBACK',)
