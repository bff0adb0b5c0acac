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
"""The list benchmark times the index's cell check by request time."""

import fixtures
from nova import context as nova_context

from nova_ext import conf as ext_conf
from nova_ext.instance_list import cellhealth
from nova_ext.tests.unit import base

from nova_ext_tools.bench import measure


class TestRequestClock(base.TestCase):

    def test_it_runs_only_while_entered(self):
        wall = base.Clock(100.0)
        clock = measure.RequestClock(wall)
        self.assertEqual(0.0, clock())
        wall.now += 5.0  # a pause between requests
        with clock:
            wall.now += 0.25
            self.assertEqual(0.25, clock())
        wall.now += 7.0
        self.assertEqual(0.25, clock())
        with clock:
            wall.now += 0.5
        self.assertEqual(0.75, clock())


class TestCellHealthClock(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MockPatchObject(nova_context, 'load_cells'))
        self.useFixture(fixtures.MockPatchObject(
            nova_context, 'scatter_gather_cells', return_value={}))
        self.flags(cell_check_interval=5.0, group='nova_ext_index')
        self.wall = base.Clock()
        self.health = cellhealth.CellHealth(clock=self.wall)

    def _check(self):
        return self.health.down_cells(None, ext_conf.CONF)

    def test_checks_are_counted(self):
        self._check()
        self._check()
        self.wall.now += 5.0
        self._check()
        self.assertEqual(2, self.health.checks)

    def test_a_new_clock_checks_next_then_times_the_interval(self):
        self._check()
        in_requests = measure.RequestClock(self.wall)
        self.health.set_clock(in_requests)
        # Its time starts at 0, before the last check by the old clock:
        # the next call checks all the same.
        self._check()
        self.assertEqual(2, self.health.checks)
        self.wall.now += 60.0  # outside any request
        self._check()
        self.assertEqual(2, self.health.checks)
        with in_requests:
            self.wall.now += 5.0
            self._check()
        self.assertEqual(3, self.health.checks)
