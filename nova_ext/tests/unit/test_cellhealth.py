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
"""When the index's cell check runs, and who waits for it.

Nova's scatter-gather is replaced by one that answers as the test says
(the real one needs cell databases; the functional tests take real cells
down with Nova's DownCellFixture).
"""

import threading

import fixtures
from nova import context as nova_context

from nova_ext.index import cellhealth
from nova_ext.tests.unit import base

UP, DOWN = 'cell-up', 'cell-down'


class TestDownCells(base.TestCase):

    def setUp(self):
        super().setUp()
        self.flags(cell_check_interval=5.0, query_timeout=2.0,
                   group='nova_ext_index')
        self.useFixture(fixtures.MockPatchObject(nova_context, 'load_cells'))
        self.useFixture(fixtures.MockPatchObject(nova_context, 'CELLS', []))
        self.useFixture(fixtures.MockPatchObject(
            nova_context, 'scatter_gather_cells', self._scatter))
        #: Cells that do not answer the next checks.
        self.down = []
        #: The threads each check ran in.
        self.threads = []
        #: Cleared to hold checks until it is set again.
        self.go = threading.Event()
        self.go.set()
        self.clock = base.Clock()
        self.health = cellhealth.CellHealth(clock=self.clock)

    def _scatter(self, ctx, cells, timeout, fn):
        self.threads.append(threading.current_thread())
        self.go.wait(10)
        return {UP: True, **{uuid: nova_context.did_not_respond_sentinel
                             for uuid in self.down}}

    def down_cells(self):
        return self.health.down_cells(nova_context.get_admin_context(),
                                      self.conf.conf)

    def wait_for_the_check(self):
        refresher = self.health._refresher
        self.assertIsNotNone(refresher)
        refresher.join(10)
        self.assertFalse(refresher.is_alive())

    def test_the_first_request_checks_and_waits(self):
        self.down = [DOWN]
        self.assertEqual([DOWN], self.down_cells())
        self.assertEqual([threading.current_thread()], self.threads)

    def test_a_recent_check_stands(self):
        self.down_cells()
        self.down = [DOWN]
        self.clock.now += 4.9
        self.assertEqual([], self.down_cells())
        self.assertEqual(1, len(self.threads))

    def test_an_old_check_stands_while_the_next_runs_in_the_background(self):
        self.down_cells()
        self.down = [DOWN]
        self.go.clear()
        self.clock.now += 5.0
        # Answered at once, from the last check, though the next one is
        # held.
        self.assertEqual([], self.down_cells())
        self.assertEqual([], self.down_cells())
        self.go.set()
        self.wait_for_the_check()
        # One check in the background, not one per request.
        self.assertEqual(2, len(self.threads))
        self.assertIsNot(threading.current_thread(), self.threads[1])
        self.assertEqual([DOWN], self.down_cells())
        self.assertEqual(2, len(self.threads))

    def test_a_check_older_than_interval_and_timeout_is_not_used(self):
        self.down_cells()
        self.down = [DOWN]
        self.clock.now += 7.0
        self.assertEqual([DOWN], self.down_cells())
        self.assertEqual([threading.current_thread()] * 2, self.threads)

    def test_no_interval_every_request_checks_and_waits(self):
        self.flags(cell_check_interval=0, group='nova_ext_index')
        self.down_cells()
        self.down = [DOWN]
        self.assertEqual([DOWN], self.down_cells())
        self.assertEqual([threading.current_thread()] * 2, self.threads)

    def test_a_refresher_that_is_gone_is_started_again(self):
        # As in a forked process: the parent's thread object, no thread.
        self.down_cells()
        gone = threading.Thread(target=lambda: None)
        gone.start()
        gone.join()
        self.health._refresher = gone
        self.down = [DOWN]
        self.clock.now += 5.0
        self.down_cells()
        self.assertIsNot(gone, self.health._refresher)
        self.wait_for_the_check()
        self.assertEqual([DOWN], self.down_cells())

    def test_a_failed_background_check_is_logged_and_left_to_age(self):
        self.down_cells()
        logged = self.useFixture(fixtures.FakeLogger(
            name=cellhealth.__name__))

        def fails(*args):
            raise RuntimeError('the API database is gone')

        self.useFixture(fixtures.MockPatchObject(
            nova_context, 'scatter_gather_cells', fails))
        self.clock.now += 5.0
        self.assertEqual([], self.down_cells())
        self.wait_for_the_check()
        self.assertIn('checking the cells failed', logged.output)
        self.assertIn('the API database is gone', logged.output)
        # Past interval + timeout, the request meets the error itself.
        self.clock.now += 2.0
        self.assertRaises(RuntimeError, self.down_cells)
