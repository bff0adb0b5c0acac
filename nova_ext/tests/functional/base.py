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
"""The base class of nova_ext's functional tests.

A real multi-cell Nova 34 from Nova's own functional harness: API,
conductor, scheduler, one compute per cell with the fake virt driver, real
placement, cell0 plus ``NUMBER_OF_CELLS`` cells, each with its own
database. nova_ext is attached through configuration (see fixtures.py).
"""

import time

from nova.tests.functional.api import client as api_client
from nova.tests.functional import integrated_helpers

from nova_ext.tests.functional import fixtures as ext_fixtures
from nova_ext.tests.functional import harness_cells


class NovaExtTestCase(integrated_helpers._IntegratedTestBase):

    NUMBER_OF_CELLS = 2
    #: Computes started in each cell, named compute<cell>-<n>.
    COMPUTES_PER_CELL = 1
    microversion = 'latest'
    # Nova's newer tests opt out of the global lock; so do ours.
    REQUIRES_LOCKING = False

    #: Which nova_ext seams the operator attached.
    NOVA_EXT_SEAMS = ext_fixtures.ALL_SEAMS
    #: nova_ext options as in nova.conf, ``{group: {option: value}}``.
    NOVA_EXT_OPTIONS = {}

    def _setup_services(self):
        self.cell_targets = self.useFixture(harness_cells.CellTargets())
        # The operator configures nova_ext before the services start.
        self.nova_ext = self.useFixture(ext_fixtures.NovaExtFixture(
            self, self.NOVA_EXT_SEAMS, self.NOVA_EXT_OPTIONS))
        super()._setup_services()

    # Nova's helpers below sleep 0.5 s between their polls, where a server
    # of this harness mostly gets there within 0.1 s. These poll after
    # 0.05 s, then twice as long each time up to 0.2 s, and give up once
    # they have slept as long as Nova's would have.

    def _wait_for_server_parameter(self, server, expected_params,
                                   max_retries=10, api=None,
                                   wait_for_fault_key=True):
        api = api or getattr(self, 'admin_api', self.api)
        # Nova sets ERROR before it records the fault; a test waiting for
        # ERROR waits for the fault too, as in Nova's helper.
        wait_for_fault = (wait_for_fault_key and
                          expected_params.get('status') == 'ERROR')
        pauses = _pauses((max_retries - 1) * 0.5)
        while True:
            server = api.get_server(server['id'])
            if (all(server[attr] == expected_params[attr]
                    for attr in expected_params) and
                    (not wait_for_fault or 'fault' in server)):
                return server
            pause = next(pauses, None)
            if pause is None:
                self.fail('Wait for state change failed, '
                          'expected_params=%s, server=%s, wait_for_fault=%s'
                          % (expected_params, server, wait_for_fault))
            time.sleep(pause)

    def _wait_until_deleted(self, server):
        initially_in_error = server.get('status') == 'ERROR'
        pauses = _pauses(40 * 0.5)
        try:
            while True:
                server = self.api.get_server(server['id'])
                if not initially_in_error and server['status'] == 'ERROR':
                    self.fail('Server went to error state instead of '
                              'disappearing.')
                pause = next(pauses, None)
                if pause is None:
                    self.fail('Server failed to delete.')
                time.sleep(pause)
        except api_client.OpenStackApiNotFoundException:
            return

    def _setup_compute_service(self):
        first = None
        for cell in range(1, self.NUMBER_OF_CELLS + 1):
            for n in range(1, self.COMPUTES_PER_CELL + 1):
                compute = self._start_compute(
                    'compute%d-%d' % (cell, n), cell_name='cell%d' % cell)
                first = first or compute
        return first


def _pauses(total):
    """Pauses of 0.05 s, doubling up to 0.2 s, that add up to ``total``."""
    pause = 0.05
    while total > 0:
        pause = min(pause, total)
        yield pause
        total -= pause
        pause = min(pause * 2, 0.2)
