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
"""Another process gets the index's write lock at once.

An operator's ``sqlite3`` shell, a ``nova-ext-manage`` command, a second
nova-api worker: each writes the same index file, and must never wait on
a write transaction of nova_ext's that is kept open longer than its own
statements take.
"""

import subprocess
import sys

import sqlalchemy as sa

from nova_ext import conf as ext_conf
from nova_ext.index import db as index_db
from nova_ext.index import schema
from nova_ext.tests.functional import test_index_capture as capture_tests

#: Seconds the outside writer waits for the lock.
WAIT = 1.0

#: A writer in a process of its own, as a ``sqlite3`` shell or the
#: ``mariadb`` and ``psql`` clients are, locking every table of the index
#: against any other writer: on SQLite the database's write lock; on
#: MariaDB, LOCK TABLES, which also waits for every transaction open on a
#: table; on PostgreSQL, EXCLUSIVE mode, which only readers share.
_TAKE_LOCK = '''
import sqlite3, sys
import sqlalchemy as sa

url, wait = sa.engine.make_url(sys.argv[1]), float(sys.argv[2])
if url.get_backend_name() == 'sqlite':
    conn = sqlite3.connect(url.database, timeout=wait, isolation_level=None)
    conn.execute('BEGIN EXCLUSIVE')
    conn.execute('ROLLBACK')
    sys.exit()
engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
tables = sa.inspect(engine).get_table_names()
with engine.connect() as conn:
    if url.get_backend_name() == 'mysql':
        conn.exec_driver_sql('SET SESSION lock_wait_timeout = %d' % wait)
        conn.exec_driver_sql('LOCK TABLES %s' % ', '.join(
            '`%s` WRITE' % t for t in tables))
        conn.exec_driver_sql('UNLOCK TABLES')
    else:
        conn.exec_driver_sql("SET lock_timeout = '%ds'" % wait)
        conn.exec_driver_sql('LOCK TABLE %s IN EXCLUSIVE MODE' % ', '.join(
            '"%s"' % t for t in tables))
        conn.rollback()
'''


class TestOutsideWriter(capture_tests._CaptureBase):

    # Every list between the changes is compared and must be served.
    EVERY_LIST_SERVED = True

    def assertOutsideWriterGetsLock(self, when):
        took = subprocess.run(
            [sys.executable, '-c', _TAKE_LOCK,
             ext_conf.CONF.nova_ext_index.connection, str(WAIT)],
            capture_output=True, text=True, timeout=60)
        self.assertEqual(0, took.returncode, '%s: %s' % (when, took.stderr))

    def test_a_writer_holding_the_lock_is_seen(self):
        engine = index_db.get_engine(ext_conf.CONF)
        with index_db.begin_write(engine) as conn:
            conn.execute(sa.delete(schema.PENDING))
            self.assertRaises(AssertionError,
                              self.assertOutsideWriterGetsLock, 'held')
        self.assertOutsideWriterGetsLock('released')

    def test_between_changes(self):
        servers = []
        for n, host in enumerate(('compute1-1', 'compute2-1', 'compute1-1')):
            servers.append(self._create_server(host=host, networks='none'))
            self.assertOutsideWriterGetsLock('after server %d' % n)
        self.assertListsNow(('',))
        self.assertOutsideWriterGetsLock('after the lists')
        self.api.post_server_action(servers[0]['id'], {'os-stop': None})
        self._wait_for_state_change(servers[0], 'SHUTOFF')
        self.assertOutsideWriterGetsLock('after a stop')
        self._delete_server(servers[1])
        self.assertOutsideWriterGetsLock('after a delete')
        self.assertListsNow(('',))
        self.assertOutsideWriterGetsLock('at the end')


class TestOutsideWriterBesideConsumer(TestOutsideWriter):
    """The documented set-up: capture, and the index consumer in process."""

    NOVA_EXT_OPTIONS = dict(
        TestOutsideWriter.NOVA_EXT_OPTIONS,
        nova_ext_notifications={'consumers': ['index']},
        notifications={'notification_format': 'versioned',
                       'notify_on_state_change': 'vm_and_task_state'})
