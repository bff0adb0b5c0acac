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
"""The cloud stopped and started again, as a developer does between runs.

``nova-ext-cloud start`` on a cloud it built starts the same cloud again
(``build.Cloud.resume``): every process anew, on the data they left. The
servers are as they were, each compute still runs its guests (it stops
and starts them), and nova_ext's nova-api answers every list as the stock
one does, from the index. Test modules run in the order of their names:
the deployment tests after this one run on the cloud it started again.
"""

import json
import random

from nova_ext_tools.tests.deployment import base
from nova_ext_tools.tests.deployment import stream
from nova_ext_tools.tests.deployment import test_stream


class TestStartedAgain(base.CloudTestCase):

    def streams(self, servers=0):
        conns = {user: (self.connect(user), self.connect(user, stock=True))
                 for user in stream.USERS}
        return stream.Stream(random.Random(0), conns, self.resources,
                             servers=servers)

    def servers(self):
        """What stock nova-api shows of each server, as admin."""
        r = self.connect('admin', stock=True).compute.get(
            '/servers/detail?all_tenants=1', headers={
                'X-OpenStack-Nova-API-Version': '2.1'})
        return {s['id']: (s['status'], s['OS-EXT-STS:vm_state'],
                          s['OS-EXT-STS:power_state'],
                          s['OS-EXT-SRV-ATTR:host'],
                          json.dumps(s['addresses'], sort_keys=True))
                for s in r.json()['servers']}

    def assertListsServed(self, what):
        counted = test_stream.counters_before(self)
        s = self.streams()
        s.check_lists(0, what, per_action=len(stream.COMBINATIONS))
        self.assertEqual([], s.differences)
        self.assertEqual(1.0, test_stream.served_share(self, what, 0, s,
                                                       counted))

    def test_servers_and_lists_outlast_a_restart(self):
        s = self.streams(servers=2)
        running, stopped = s.create('member1'), s.create('member1')
        compute = s.conns['member1'][0].compute
        for sid in (running, stopped):
            self.assertEqual('ACTIVE', s.settle(sid, 180).status)
        compute.stop_server(stopped)
        s.settle(stopped)
        before = self.servers()
        self.assertEqual(('ACTIVE', 'SHUTOFF'),
                         (before[running][0], before[stopped][0]))
        self.cloud.stop()
        self.cloud.resume()
        self.assertEqual(before, self.servers())
        self.assertListsServed('started again')
        # Its compute still has both guests: it starts the one and stops
        # the other.
        s = self.streams()
        s.servers = {running: 'member1', stopped: 'member1'}
        compute = s.conns['member1'][0].compute
        compute.start_server(stopped)
        compute.stop_server(running)
        self.assertEqual(('SHUTOFF', 'ACTIVE'),
                         (s.settle(running, 120).status,
                          s.settle(stopped, 120).status))
        self.assertListsServed('started again, after a stop and a start')
        self.assertEqual([], self.nova_ext_errors())
