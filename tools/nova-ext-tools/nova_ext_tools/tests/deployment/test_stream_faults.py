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
"""Faults in the middle of a differential change stream, in the real cloud.

It runs after the install guide's checks and the plain stream (test
modules run in the order of their names), which each want a cloud no fault
has touched.

A cell conductor and a nova-api worker killed with SIGKILL, the index
database user without its grants for 30 s, MariaDB restarted, RabbitMQ
restarted: lists stay Nova's answers throughout (no 500 of nova_ext's
own: a status the stock nova-api did not give is a difference), and
afterwards the index has lost nothing (``nova-ext-manage index verify``)
and no killed process is left a holder of the index's marks.
``NOVA_EXT_FAULT_ACTIONS`` sets the stream's length.
"""

import time

from nova_ext_tools.cloud import procs
from nova_ext_tools.tests.deployment import base
from nova_ext_tools.tests.deployment import faults
from nova_ext_tools.tests.deployment import stream
from nova_ext_tools.tests.deployment import test_stream


class TestFaults(base.CloudTestCase):

    def test_faults_in_a_stream(self):
        seed, actions, s = test_stream.new_stream(
            self, 'NOVA_EXT_FAULT_ACTIONS', 60)
        injected = faults.Faults(self.cloud)
        self.addCleanup(injected.finish)
        started = time.monotonic()
        try:
            s.run(actions, faults=injected)
        finally:
            print('fault stream seed %d: %d actions, %d comparisons, %d '
                  'differences, faults %s, %.0f s' % (
                      seed, len(s.actions), s.comparisons,
                      len(s.differences), injected.done,
                      time.monotonic() - started))
        self.assertEqual(injected.names(), injected.done)
        self.assertEqual([], s.differences[:5], 'seed %d: %d differences'
                         % (seed, len(s.differences)))
        # Nothing lost, once the index has caught up (max_lag).
        deadline = time.monotonic() + 120
        while True:
            done = self.cloud.ext.command('nova-ext-manage', 'index',
                                          'verify', check=False)
            if done.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(5)
        self.assertEqual(0, done.returncode, done.stdout + done.stderr)
        # Processes killed with SIGKILL left their holder rows; watching
        # nova-apis and indexers release them by their beats.
        lister = stream.Lister(self.connect(), self.connect(stock=True))
        deadline = time.monotonic() + 120
        while True:
            dead = {pid: host for pid, host in injected.holders().items()
                    if not procs.alive(pid)}
            if not dead or time.monotonic() > deadline:
                break
            lister.compare('/servers?all_tenants=1', 'latest')
            time.sleep(2)
        self.assertEqual({}, dead, 'holder rows of dead processes')
        print('holders after the faults: %s (killed: %s)'
              % (sorted(injected.holders()), injected.killed))
        # What operators are told after the faults: whether nova-api lists
        # from the index, by the rules it applies to each list.
        done = self.cloud.ext.command('nova-ext-manage', 'index', 'status',
                                      check=False)
        print('index status after the faults (exit %d):\n%s'
              % (done.returncode, done.stdout))
