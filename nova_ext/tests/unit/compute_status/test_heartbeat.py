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

import time

from nova_ext.compute_status import heartbeat
from nova_ext.tests.unit import base


class _Service(object):
    def __init__(self, report_count=1, forced_down=False):
        self.uuid = 's1'
        self.report_count = report_count
        self.forced_down = forced_down


class _SG(object):
    """The servicegroup API's answer, as a host with any clock gives it."""
    up = True

    def service_is_up(self, service):
        return self.up and not service.forced_down


class _TrackerTestCase(base.TestCase):
    COUNTED = True

    def setUp(self):
        super().setUp()
        self.now = 1000.0
        self.sg = _SG()
        self.tracker = heartbeat.HeartbeatTracker(
            self.sg, 60, counted=self.COUNTED, clock=lambda: self.now)

    def _at(self, seconds, service):
        self.now = 1000.0 + seconds
        return self.tracker(service)


class TestCountedHeartbeats(_TrackerTestCase):
    """Nova's db driver: the counter decides, timed on the watcher's clock."""

    def test_down_only_after_a_full_window(self):
        svc = _Service()
        self.assertIsNone(self._at(0, svc))
        svc.report_count += 1
        self.assertTrue(self._at(10, svc))
        self.assertIsNone(self._at(40, svc))
        self.assertIsNone(self._at(69, svc))
        self.assertFalse(self._at(70, svc))
        self.assertFalse(self._at(500, svc))
        svc.report_count += 1
        self.assertTrue(self._at(501, svc))

    def test_moving_counter_is_never_down(self):
        # The servicegroup API says down (this host's clock is ahead, or
        # the writer's behind); the counter moves.
        self.sg.up = False
        svc = _Service()
        self.assertIsNone(self._at(0, svc))
        for t in range(10, 300, 10):
            svc.report_count += 1
            self.assertTrue(self._at(t, svc))

    def test_standing_counter_is_down_whatever_the_timestamps(self):
        # The servicegroup API says up: this host's clock is behind by more
        # than service_down_time, so a heartbeat that stopped a minute ago
        # looks recent. A watcher on time has marked the compute down;
        # this one must not take that back.
        svc = _Service()
        self.assertIsNone(self._at(0, svc))
        for t in (30, 59):
            self.assertIsNone(self._at(t, svc))
        for t in (60, 90, 130):
            self.assertFalse(self._at(t, svc))

    def test_first_sighting_is_unknown_whatever_the_servicegroup_says(self):
        for up in (True, False):
            self.sg.up = up
            self.tracker = heartbeat.HeartbeatTracker(
                self.sg, 60, clock=lambda: self.now)
            svc = _Service()
            self.assertIsNone(self._at(0, svc))
            self.assertFalse(self._at(60, svc))

    def test_slow_sweeps_do_not_mark_a_live_compute(self):
        # Looks further apart than the window (a watcher paused, a slow
        # database): the counter moved in between, so the compute is not
        # down; it is not known to be up now either.
        svc = _Service()
        self.assertIsNone(self._at(0, svc))
        for t in (300, 600, 900):
            svc.report_count += 30
            self.assertIsNone(self._at(t, svc))

    def test_a_heartbeat_since_a_look_too_long_ago_is_not_life(self):
        # The compute died after its last heartbeat, which came between
        # two looks further apart than the window: it may be that old.
        svc = _Service()
        self.assertIsNone(self._at(0, svc))
        svc.report_count += 1
        self.assertIsNone(self._at(100, svc))
        # The window then runs from that look, the latest the heartbeat
        # can have been.
        self.assertIsNone(self._at(159, svc))
        self.assertFalse(self._at(160, svc))

    def test_a_heartbeat_after_a_late_look_is_life_at_the_next(self):
        svc = _Service()
        self.assertIsNone(self._at(0, svc))
        svc.report_count += 10
        self.assertIsNone(self._at(100, svc))
        svc.report_count += 1
        self.assertTrue(self._at(120, svc))
        self.assertIsNone(self._at(150, svc))

    def test_counted_through_a_forced_down(self):
        # Cleared on a compute that kept reporting in: up at once.
        live = _Service(forced_down=True)
        self.assertIsNone(self._at(0, live))
        live.report_count += 1
        self.assertTrue(self._at(10, live))
        live.forced_down = False
        live.report_count += 1
        self.assertTrue(self._at(20, live))
        # Cleared on one that stopped long ago: down at once.
        dead = _Service(forced_down=True)
        dead.uuid = 's2'
        self.assertIsNone(self._at(30, dead))
        self.assertFalse(self._at(100, dead))
        dead.forced_down = False
        self.assertFalse(self._at(110, dead))

    def test_default_clock_is_monotonic(self):
        tracker = heartbeat.HeartbeatTracker(self.sg, 60)
        self.assertIs(time.monotonic, tracker._clock)


class TestUncountedHeartbeats(_TrackerTestCase):
    """Nova's mc driver: only the servicegroup API knows."""
    COUNTED = False

    def test_down_after_a_full_window_of_down_answers(self):
        svc = _Service()
        self.assertTrue(self._at(0, svc))
        self.sg.up = False
        self.assertIsNone(self._at(30, svc))
        self.assertIsNone(self._at(59, svc))
        self.assertFalse(self._at(60, svc))
        self.sg.up = True
        self.assertTrue(self._at(61, svc))
        # An up answer starts the window again.
        self.sg.up = False
        self.assertIsNone(self._at(100, svc))
        self.assertFalse(self._at(121, svc))

    def test_first_sighting_of_a_down_service_is_unknown(self):
        self.sg.up = False
        svc = _Service()
        self.assertIsNone(self._at(0, svc))
        self.assertFalse(self._at(60, svc))
