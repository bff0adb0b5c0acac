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
"""The harness is what it claims: several cells, real placement, Nova 34."""

import time

from nova import context as nova_context
from nova import objects
from nova import utils as nova_utils
import sqlalchemy as sa

from nova_ext import conf as ext_conf
from nova_ext.index.marks import holders
from nova_ext.index.marks import witness
from nova_ext.index import schema
from nova_ext.tests.functional import base
from nova_ext.tests.functional import test_index_parity

CONF = ext_conf.CONF


class TestHarness(base.NovaExtTestCase):

    def test_servers_land_in_every_cell(self):
        for cell in range(1, self.NUMBER_OF_CELLS + 1):
            self._create_server(
                name='in-cell%d' % cell, host='compute%d-1' % cell,
                networks='none', api=self.admin_api)
        ctxt = nova_context.get_admin_context()
        cells = {}
        for server in self.api.get_servers():
            mapping = objects.InstanceMapping.get_by_instance_uuid(
                ctxt, server['id'])
            cells[server['name']] = mapping.cell_mapping.name
        self.assertEqual({'in-cell1': 'cell1', 'in-cell2': 'cell2'}, cells)
        providers = self.placement.get('/resource_providers').body
        self.assertEqual(
            {'compute1-1', 'compute2-1'},
            {rp['name'] for rp in providers['resource_providers']})


class TestStalledProcess(test_index_parity.IndexTestCase):
    """A list sent to Nova for a stall of the harness's one process.

    Each list is compared once more, once every holder vouched again;
    a holder that stays silent fails the comparison.
    """

    HEARTBEAT = 1.0

    def setUp(self):
        super().setUp()
        self.flags(holder_heartbeat_interval=self.HEARTBEAT,
                   group='nova_ext_index')
        self._create_server(host='compute1-1', networks='none')
        self.sync_index()
        other = holders.Lease(CONF)
        other.ensure(self.index.engine)
        self.addCleanup(other.stop)
        self.wait_for_vouches(time.monotonic())

    def silenced(self, stats):
        return sum(count for reason, count in
                   stats['reasons'].get('unservable', {}).items()
                   if 'holders of marks' in reason)

    def test_a_list_after_a_stall_is_compared_again(self):
        if nova_utils.concurrency_mode_threading():
            self.skipTest('native threads run on while one computes')
        before = self.selector.stats.snapshot()
        # Longer than the window: a greenthread that computes holds the
        # holders' heartbeats and this process's reads of them.
        end = time.monotonic() + holders.window(CONF) * 1.5
        while time.monotonic() < end:
            pass
        self.assertSameAnswer(self.admin_api, 'servers/detail')
        after = self.selector.stats.snapshot()
        self.assertEqual(1, after['served'] - before['served'])
        self.assertEqual(1, self.silenced(after) - self.silenced(before),
                         after)

    def _silent_holder(self):
        with self.index.engine.begin() as conn:
            conn.execute(sa.insert(schema.HOLDERS).values(
                holder='silent', host='elsewhere', pid=1, beats=0,
                vouches=1, started_at=time.time()))
        seen = witness.get_witness(CONF)
        deadline = time.monotonic() + holders.window(CONF) * 5
        while 'silent' not in (seen.silent() or []):
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)

    def _fails_the_comparison(self):
        before = self.selector.stats.snapshot()
        error = self.assertRaises(AssertionError, self.assertSameAnswer,
                                  self.admin_api, 'servers/detail')
        after = self.selector.stats.snapshot()
        self.assertEqual(before['served'], after['served'])
        self.assertLess(self.silenced(before), self.silenced(after))
        return error

    def test_a_silent_holder_fails_the_comparison(self):
        self._silent_holder()
        self._fails_the_comparison()

    def test_a_silent_holder_fails_the_comparison_after_a_stall(self):
        # The list is compared again, once the holders vouched: one that
        # stayed silent until it was released as dead never did.
        if nova_utils.concurrency_mode_threading():
            self.skipTest('native threads run on while one computes')
        self.flags(holder_timeout=3.0, group='nova_ext_index')
        self._silent_holder()
        end = time.monotonic() + holders.window(CONF) * 1.5
        while time.monotonic() < end:
            pass
        error = self._fails_the_comparison()
        self.assertIn("released as dead, not held up by a stall: "
                      "['silent']", str(error))
