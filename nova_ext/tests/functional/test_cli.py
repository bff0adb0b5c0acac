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
"""nova-ext-manage as an operator runs it: its own process and nova.conf.

Its result goes to stdout and nothing else does (logs go to stderr), and a
read-only command never creates the index.
"""

import os
import subprocess
import sys

import fixtures
from oslotest import base as oslotest_base

from nova_ext.index import migration

MANAGE = os.path.join(os.path.dirname(sys.executable), 'nova-ext-manage')


class TestManageCommand(oslotest_base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.index = os.path.join(self.dir, 'index.sqlite')
        self.conf = os.path.join(self.dir, 'nova.conf')
        with open(self.conf, 'w') as f:
            f.write('[DEFAULT]\nstate_path = %s\n'
                    '[nova_ext_index]\nconnection = sqlite:///%s\n'
                    % (self.dir, self.index))

    def manage(self, *argv):
        return subprocess.run(
            [MANAGE, '--config-file', self.conf] + list(argv),
            capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL)

    def test_read_only_command_on_a_missing_index(self):
        done = self.manage('index', 'status', '--format', 'json')
        self.assertEqual(2, done.returncode, done.stderr)
        self.assertEqual('', done.stdout)
        self.assertIn('does not exist: run "nova-ext-manage index db_sync"',
                      done.stderr)
        self.assertNotIn('Traceback', done.stderr)
        self.assertEqual(['nova.conf'], os.listdir(self.dir))

    def test_db_sync_prints_only_its_result(self):
        done = self.manage('index', 'db_sync')
        self.assertEqual(0, done.returncode, done.stderr)
        self.assertEqual('index schema at revision %s\n' % migration.head(),
                         done.stdout)
        self.assertTrue(os.path.exists(self.index))
