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
"""The fixed-interval loops of nova_ext's services, in one process.

The services themselves, signals and all, run as processes in
``nova_ext.tests.functional.test_services``.
"""

import logging
import threading
import time

import fixtures

from nova_ext.service import periodic
from nova_ext.tests.unit import base


def _wait(predicate, timeout=10):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


class TestPeriodic(base.TestCase):

    def periodic(self, fn, spacing, **kwargs):
        looping = periodic.Periodic(fn, spacing, 'test-periodic', **kwargs)
        self.addCleanup(looping.stop, 5)
        return looping

    def test_calls_at_once_then_every_spacing(self):
        calls = []
        looping = self.periodic(lambda: calls.append(time.monotonic()), 0.3)
        started = time.monotonic()
        looping.start()
        self.assertTrue(_wait(lambda: len(calls) >= 3))
        self.assertLess(calls[0] - started, 0.2)
        self.assertGreaterEqual(calls[1] - calls[0], 0.28)
        self.assertGreaterEqual(calls[2] - calls[1], 0.28)
        self.assertTrue(looping.stop(5))
        count = len(calls)
        time.sleep(0.5)
        self.assertEqual(count, len(calls))

    def test_stop_does_not_wait_for_the_next_call(self):
        calls = []
        looping = self.periodic(lambda: calls.append(1), 60)
        looping.start()
        self.assertTrue(_wait(lambda: calls))
        stopping = time.monotonic()
        self.assertTrue(looping.stop(30))
        self.assertLess(time.monotonic() - stopping, 5)

    def test_first_call_one_spacing_after_start(self):
        calls = []
        looping = self.periodic(lambda: calls.append(time.monotonic()), 0.3,
                                run_immediately=False)
        started = time.monotonic()
        looping.start()
        self.assertTrue(_wait(lambda: calls))
        self.assertGreaterEqual(calls[0] - started, 0.28)

    def test_spacing_counts_from_the_end_of_a_call(self):
        calls = []

        def slow():
            calls.append(time.monotonic())
            time.sleep(0.2)
        looping = self.periodic(slow, 0.1)
        looping.start()
        self.assertTrue(_wait(lambda: len(calls) >= 2))
        self.assertGreaterEqual(calls[1] - calls[0], 0.29)

    def test_errors_are_logged_and_the_call_made_again(self):
        log = self.useFixture(fixtures.FakeLogger(level=logging.ERROR))
        calls = []

        def failing():
            calls.append(1)
            raise RuntimeError('database away')
        looping = self.periodic(failing, 0.01)
        looping.start()
        self.assertTrue(_wait(lambda: len(calls) >= 3))
        self.assertTrue(looping.stop(5))
        self.assertIn('database away', log.output)

    def test_never_again(self):
        calls = []

        def once():
            calls.append(1)
            raise periodic.NeverAgain()
        looping = self.periodic(once, 0.01)
        looping.start()
        self.assertTrue(_wait(lambda: calls))
        time.sleep(0.1)
        self.assertEqual([1], calls)
        self.assertTrue(looping.stop(5))

    def test_stop_lets_the_call_under_way_finish(self):
        inside, release = threading.Event(), threading.Event()

        def blocking():
            inside.set()
            release.wait(10)
        looping = self.periodic(blocking, 0.01)
        looping.start()
        self.assertTrue(inside.wait(10))
        self.assertFalse(looping.stop(0.1))
        release.set()
        self.assertTrue(looping.stop(5))

    def test_stop_before_start(self):
        looping = self.periodic(lambda: None, 1)
        self.assertTrue(looping.stop())
