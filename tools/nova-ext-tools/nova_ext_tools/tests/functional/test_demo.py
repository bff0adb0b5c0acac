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
"""The main job, nova-ext-demo, runs end to end as a user runs it."""

import os
import re
import subprocess
import sys

import testtools


class TestDemo(testtools.TestCase):

    def _demo(self, *args):
        env = dict(os.environ)
        # The demo picks its own concurrency mode and temporary directory.
        env.pop('OS_NOVA_DISABLE_EVENTLET_PATCHING', None)
        return subprocess.run(
            [sys.executable, '-m', 'nova_ext_tools.cmd.demo'] + list(args),
            capture_output=True, text=True, timeout=600, env=env)

    def test_tour_passes_on_three_cells(self):
        run = self._demo('--cells', '3', '--servers', '3')
        self.assertEqual(0, run.returncode, run.stdout + run.stderr)
        self.assertIn('3 cells + cell0', run.stdout)
        self.assertIn('servers spread over 3 cells', run.stdout)
        self.assertRegex(run.stdout, r'\n\d+ checks, 0 failed\n')
        self.assertNotIn('[FAILED]', run.stdout)
        # Nothing the tour calls warns that it is deprecated (the
        # compute-status scene moves the clock by patching
        # timeutils.utcnow, as oslo.utils asks).
        self.assertNotIn(': DeprecationWarning: ', run.stderr)
        self.assertIn('the watcher marked', run.stdout)
        # Rebuild from cell0: the server that found no host is the same
        # server afterwards, ACTIVE on the compute added to cell1.
        uuid = re.search(r'\nBooted ([0-9a-f-]{36}): ', run.stdout).group(1)
        self.assertIn('[ok] ERROR, in cell0', run.stdout)
        self.assertIn("stock Nova's 409, still in cell0", run.stdout)
        self.assertIn('[ok] the same server, UUID %s\n' % uuid, run.stdout)
        self.assertIn('[ok] ACTIVE in cell1 on compute1-2, no longer in '
                      'cell0\n', run.stdout)
        self.assertRegex(run.stdout, r'\n  after +%s +ACTIVE +cell1 ' % uuid)
        # Everything it wrote was in its temporary directory, now gone.
        workdir = run.stdout.split('state in ', 1)[1].split(' ', 1)[0]
        self.assertFalse(os.path.exists(workdir))

    def test_bad_arguments_are_refused(self):
        run = self._demo('--cells', '0')
        self.assertEqual(2, run.returncode)
        self.assertIn('--cells must be at least 1', run.stderr)
        run = self._demo('--scenes', 'nope')
        self.assertEqual(2, run.returncode)
        self.assertIn('unknown scenes: nope', run.stderr)
