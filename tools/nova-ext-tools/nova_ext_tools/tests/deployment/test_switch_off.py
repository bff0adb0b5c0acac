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
"""The install guide's "Switching nova_ext off", in the real cloud.

It changes the cloud for good, so it runs last (test modules run in the
order of their names): every capability off, nova_ext's services stopped,
the seams detached, the Nova services restarted after each step.
"""

import filecmp
import time

from nova_ext_tools.tests.deployment import base
from nova_ext_tools.tests.deployment import stream


class TestSwitchingOff(base.CloudTestCase):

    def assertListsAreNovas(self):
        conns = {user: (self.connect(user), self.connect(user, stock=True))
                 for user in stream.USERS}
        s = stream.Stream(None, conns, self.resources)
        s.check_lists(0, 'switched off', per_action=len(stream.COMBINATIONS))
        self.assertEqual([], s.differences)

    def since(self, name, mark):
        return self.log_of(name)[mark.get(name, 0):]

    def test_switch_off_then_detach(self):
        ext, nova = self.cloud.ext, self.cloud.nova
        names = nova.process_names()
        # Step 1: every capability back to its default, Nova restarted.
        ext.switch_off()
        mark = {n: len(self.log_of(n)) for n in names}
        nova.restart_all()
        self.assertListsAreNovas()
        # The index's driver no longer attaches; the seams still do.
        self.assertNotIn('instance list driver index attached',
                         self.since('nova-api', mark))
        # Step 2: nova_ext's own services stopped.
        for name in ('nova-ext-indexer', 'nova-ext-status-watcher'):
            self.cloud.ps.stop(name)
            self.assertFalse(self.cloud.ps.running(name))
        # Step 3: detached. api-paste.ini is the one it was given.
        ext.detach()
        self.assertTrue(filecmp.cmp(nova.paste, nova.stock_paste,
                                    shallow=False))
        mark = {n: len(self.log_of(n)) for n in names}
        nova.restart_all()
        self.assertListsAreNovas()
        for name in names:
            self.assertNotIn('nova_ext', self.since(name, mark), name)
        # Nova's answers again where nova_ext answered: a server that found
        # no host cannot be rebuilt from cell0 (Nova's 409).
        conn = self.connect('admin')
        compute = conn.compute
        server = compute.create_server(
            name='after-off', image_id=self.resources['image'],
            flavor_id=compute.find_flavor('huge').id,
            networks='none')
        deadline = time.monotonic() + 120
        while compute.get_server(server.id).status != 'ERROR':
            self.assertLess(time.monotonic(), deadline)
            time.sleep(1)
        r = compute.post('/servers/%s/action' % server.id, json={
            'rebuild': {'imageRef': self.resources['image']}},
            raise_exc=False)
        self.assertEqual(409, r.status_code, r.text)
