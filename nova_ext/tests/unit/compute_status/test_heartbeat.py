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
"""The heartbeat rule."""

import datetime

from nova_ext.compute_status import heartbeat
from nova_ext.tests.unit import base


class _Service(object):
    def __init__(self, report_count=1, forced_down=False):
        self.uuid = 's1'
        self.report_count = report_count
        self.forced_down = forced_down


class _SG(object):
    up = True

    def service_is_up(self, service):
        return self.up and not service.forced_down


class TestHeartbeatTracker(base.TestCase):

    def setUp(self):
        super().setUp()
        self.now = datetime.datetime(2024, 1, 1)
        self.sg = _SG()
        self.tracker = heartbeat.HeartbeatTracker(
            self.sg, 60, clock=lambda: self.now)

    def _at(self, seconds, service):
        self.now = datetime.datetime(2024, 1, 1) + datetime.timedelta(
            seconds=seconds)
        return self.tracker(service)

    def test_down_only_after_a_full_window(self):
        svc = _Service()
        self.assertTrue(self._at(0, svc))
        self.sg.up = False
        self.assertIsNone(self._at(30, svc))
        self.assertIsNone(self._at(59, svc))
        self.assertFalse(self._at(60, svc))
        svc.report_count += 1
        self.assertTrue(self._at(61, svc))

    def test_moving_counter_is_never_down(self):
        # Clock skew: the servicegroup API says down, the counter moves.
        self.sg.up = False
        svc = _Service()
        self.assertIsNone(self._at(0, svc))
        for t in range(10, 300, 10):
            svc.report_count += 1
            self.assertTrue(self._at(t, svc))

    def test_first_sighting_of_a_down_service_is_unknown(self):
        self.sg.up = False
        svc = _Service()
        self.assertIsNone(self._at(0, svc))
        self.assertFalse(self._at(60, svc))

    def test_forced_down_defers_to_the_flag(self):
        svc = _Service(forced_down=True)
        self.assertIsNone(self._at(0, svc))
        svc.forced_down = False
        self.assertTrue(self._at(1, svc))
