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

import logging

from nova_ext.compute_status import watcher
from nova_ext.tests.unit import base


class TestFromConf(base.TestCase):

    def setUp(self):
        super().setUp()
        self.flags(trait_callbacks=['compute-status'],
                   group='nova_ext_compute_status')
        self.flags(service_down_time=60)

    def _watcher(self):
        return watcher.Watcher.from_conf(self.conf.conf,
                                         servicegroup_api=object())

    def test_default_interval_sees_a_compute_come_back(self):
        with self.assertNoLogs(watcher.__name__, logging.WARNING):
            w = self._watcher()
        self.assertEqual(20, w.interval)
        self.assertEqual(60, w.tracker.down_time)

    def test_interval_shortened_to_half_the_down_time(self):
        self.flags(watch_interval=60, group='nova_ext_compute_status')
        with self.assertLogs(watcher.__name__, logging.WARNING) as logs:
            w = self._watcher()
        self.assertEqual(30, w.interval)
        self.assertIn('sweeping every 30 s', logs.output[0])

    def test_heartbeats_counted_with_the_db_driver_only(self):
        self.assertTrue(self._watcher().tracker.counted)
        self.flags(servicegroup_driver='mc')
        self.assertFalse(self._watcher().tracker.counted)
