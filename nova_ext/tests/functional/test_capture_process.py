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
by the time the write returns.
"""

import json
import os
import subprocess
import sys

import fixtures
from oslo_config import fixture as config_fixture
import testtools

from nova_ext import conf as ext_conf
from nova_ext.index import db as index_db
from nova_ext.index import migration as index_migration
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
connection = sqlite:///{tmp}/index.sqlite
capture = {capture}
"""


class TestCaptureInAConductorProcess(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        conf = self.useFixture(config_fixture.Config(ext_conf.CONF))
        conf.config(connection='sqlite:///%s/index.sqlite' % self.tmp,
                    group='nova_ext_index')
        index_db.reset()
        self.addCleanup(index_db.reset)
        index_migration.db_sync(ext_conf.CONF)

    def run_process(self, capture):
        path = os.path.join(self.tmp, 'nova.conf')
        with open(path, 'w') as f:
            f.write(NOVA_CONF.format(tmp=self.tmp, capture=capture))
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

    def test_nothing_is_marked_without_capture(self):
        marked = self.run_process(capture='false')
        self.assertEqual({write: [] for write in marked}, marked)
