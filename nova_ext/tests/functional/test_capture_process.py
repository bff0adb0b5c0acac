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
"""Capture is installed per process, by configuration alone.

In Nova's in-process harness every service shares one interpreter, so a
hook installed there by the API filter would seem to cover the conductors
too. This test starts a separate OS process configured as an operator
configures a nova-conductor (the notification driver line, the index
connection, capture; no api-paste.ini, no nova_ext code called by hand)
and checks that each Nova database write it makes is marked in the index
by the time the write returns. A real nova-conductor so configured says,
once, in the log file it sets up after loading nova_ext, that nova_ext is
attached.
"""

import json
import os
import signal
import subprocess
import sys
import time

import fixtures
from oslo_config import fixture as config_fixture
import sqlalchemy as sa
import testtools

from nova_ext import conf as ext_conf
from nova_ext.index import db as index_db
from nova_ext.index import schema
from nova_ext.index.upkeep import migration as index_migration
from nova_ext.tests.functional import conductor_process

NOVA_CONF = """
[DEFAULT]
transport_url = fake:/
state_path = {tmp}
[database]
connection = sqlite:///{tmp}/cell1.sqlite
[api_database]
connection = sqlite:///{tmp}/api.sqlite
[oslo_messaging_notifications]
driver = messagingv2
driver = nova_ext
[notifications]
notification_format = versioned
[nova_ext_index]
connection = {index}
capture = {capture}
"""


class IndexInTmp(object):
    """An SQLite index in a temporary directory, as nova_ext's CONF says."""

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.path = os.path.join(self.tmp, 'index.sqlite')
        self.index = 'sqlite:///' + self.path
        conf = self.useFixture(config_fixture.Config(ext_conf.CONF))
        conf.config(connection=self.index, group='nova_ext_index')
        index_db.reset()
        self.addCleanup(index_db.reset)
        index_migration.db_sync(ext_conf.CONF)
        self.engine = index_db.get_engine(ext_conf.CONF)

    def count(self, table):
        with self.engine.connect() as conn:
            return conn.execute(sa.select(sa.func.count()).select_from(
                table)).scalar()


class TestCaptureInAConductorProcess(IndexInTmp, testtools.TestCase):

    def run_process(self, capture):
        path = os.path.join(self.tmp, 'nova.conf')
        with open(path, 'w') as f:
            f.write(NOVA_CONF.format(tmp=self.tmp, index=self.index,
                                     capture=capture))
        done = subprocess.run(
            [sys.executable, '-m', conductor_process.__name__,
             '--config-file', path],
            capture_output=True, text=True, timeout=120)
        self.assertEqual(0, done.returncode, done.stderr[-3000:])
        return {line['write']: line['marked'] for line in
                map(json.loads, done.stdout.splitlines())}

    def test_every_write_is_marked_when_it_returns(self):
        marked = self.run_process(capture='true')
        self.assertEqual(6, len(marked), marked)
        for write, uuids in marked.items():
            self.assertEqual([conductor_process.UUID], uuids, write)
        # It exited cleanly: no holder of it is left for others to wait
        # for (nova_ext.index.marks.holders).
        for table in (schema.HOLDERS, schema.HOLDS):
            self.assertEqual(0, self.count(table))

    def test_nothing_is_marked_without_capture(self):
        marked = self.run_process(capture='false')
        self.assertEqual({write: [] for write in marked}, marked)

    def test_nova_conductor_logs_the_attach_lines_once(self):
        path = os.path.join(self.tmp, 'nova.conf')
        log_file = os.path.join(self.tmp, 'conductor.log')
        with open(path, 'w') as f:
            f.write(NOVA_CONF.format(tmp=self.tmp, index=self.index,
                                     capture='true'))
            # Forked workers, and a placement client that never needs to
            # answer.
            f.write('[conductor]\nworkers = 2\n[placement]\n'
                    'auth_type = none\n'
                    'endpoint_override = http://127.0.0.1:9\n')
        bin_dir = os.path.dirname(sys.executable)
        for argv in (['api_db', 'sync'], ['db', 'sync']):
            subprocess.run([os.path.join(bin_dir, 'nova-manage'),
                            '--config-file', path] + argv, check=True,
                           capture_output=True, timeout=120)
        proc = subprocess.Popen(
            [os.path.join(bin_dir, 'nova-conductor'), '--config-file', path,
             '--log-file', log_file], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        self.addCleanup(proc.wait, 30)
        self.addCleanup(self._killpg, proc.pid)
        wanted = ('nova_ext notification driver attached; consumers: ',
                  'nova_ext index change capture attached')
        deadline = time.monotonic() + 60
        while not all(w in self._read(log_file) for w in wanted):
            self.assertIsNone(proc.poll(), self._read(log_file)[-3000:])
            self.assertLess(time.monotonic(), deadline,
                            self._read(log_file)[-3000:])
            time.sleep(0.2)
        # Its workers are forked and serve before SIGTERM stops them.
        while self._read(log_file).count('Starting conductor node') < 2:
            self.assertLess(time.monotonic(), deadline,
                            self._read(log_file)[-3000:])
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        logged = self._read(log_file)
        for want in wanted:
            self.assertEqual(1, logged.count(want), logged[-3000:])

    @staticmethod
    def _read(path):
        try:
            with open(path) as f:
                return f.read()
        except FileNotFoundError:
            return ''

    @staticmethod
    def _killpg(pid):
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
