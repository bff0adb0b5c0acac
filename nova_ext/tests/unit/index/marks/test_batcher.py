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

import time

import fixtures
from oslo_db import exception as db_exc

from nova_ext.index.marks import batcher as batcher_mod
from nova_ext.index.marks import pending
from nova_ext.index.marks import told
from nova_ext.tests.unit.index import base as index_base


class TestBatcher(index_base.BatcherTestCase):

    def test_batches_of_size(self):
        batcher = self.batcher(size=100)
        for n in range(250):
            batcher.add('u-%d' % n, float(n))
        self.assertTrue(batcher.flush(10))
        self.assertEqual(250, len(self.marked()))
        # One transaction per 100 or so, and one for the rest.
        self.assertLessEqual(len(self.batches), 3)
        self.assertEqual(250, sum(len(b) for b in self.batches))
        self.assertEqual(250, batcher.marked)

    def test_changes_of_an_instance_make_one_mark(self):
        batcher = self.batcher()
        for when in (5.0, 1.0, 9.0):
            batcher.add('a', when)
        self.assertTrue(batcher.flush(10))
        self.assertEqual([{'a': (1.0, 9.0)}], self.batches)
        self.assertEqual({'a': (1.0, 9.0)}, self.marked())

    def test_a_lone_change_waits_for_the_delay_only(self):
        batcher = self.batcher(delay=0.05)
        started = time.monotonic()
        batcher.add('a', 1.0)
        while not self.marked():
            self.assertLess(time.monotonic() - started, 10)
            time.sleep(0.005)
        self.assertGreaterEqual(time.monotonic() - started, 0.04)

    def test_a_waiter_does_not_wait_for_the_delay(self):
        batcher = self.batcher(delay=60)
        batcher.add('a', 1.0)
        self.assertTrue(batcher.wait(batcher.add('b', 1.0), 10))
        self.assertEqual([{'a': (1.0, 1.0), 'b': (1.0, 1.0)}], self.batches)

    def test_a_mark_failing_twice_loses_nothing(self):
        calls = self.fail_first(2)
        batcher = self.batcher(delay=0.001)
        ticket = batcher.add('a', 1.0)
        # While it fails, a consumer does not wait for it.
        deadline = time.monotonic() + 10
        while not batcher.failures and time.monotonic() < deadline:
            time.sleep(0.001)
        self.assertFalse(batcher.wait(ticket, 10))
        batcher.add('b', 2.0)
        batcher.add('a', 3.0)
        self.assertTrue(batcher.flush(10))
        self.assertEqual({'a': (1.0, 3.0), 'b': (2.0, 2.0)}, self.marked())
        self.assertEqual(2, batcher.failures)
        self.assertEqual({'a': (1.0, 1.0)}, calls[0])
        self.assertTrue(batcher.wait(ticket, 0))

    def test_notification_ids_are_recorded_with_their_batch(self):
        # Kept through a failed batch, recorded with the one that commits.
        self.fail_first(1)
        batcher = self.batcher(delay=0.001)
        batcher.add('a', 1.0, told='m1')
        deadline = time.monotonic() + 10
        while not batcher.failures and time.monotonic() < deadline:
            time.sleep(0.001)
        batcher.add('b', 2.0, told='m2')
        batcher.add_all(['c'], 3.0)
        self.assertTrue(batcher.flush(10))
        self.assertEqual({'a', 'b', 'c'}, set(self.marked()))
        got = index_base.told(self.engine)
        self.assertEqual(['m1', 'm2'], sorted(got))
        number = pending.mark(self.engine, [('d', 4.0)])
        self.assertEqual({number - 1}, set(got.values()))

    def test_old_notification_ids_are_pruned_every_interval(self):
        self.useFixture(fixtures.MockPatchObject(told, 'KEEP', 1))
        batcher = self.batcher(delay=0.001)
        self.assertTrue(batcher.wait(batcher.add('a', 1.0, told='m1'), 10))
        self.assertTrue(batcher.wait(batcher.add('a', 2.0, told='m2'), 10))
        # Not an interval yet since the batcher started.
        self.assertEqual(['m1', 'm2'],
                         sorted(index_base.told(self.engine)))
        batcher._pruned -= batcher_mod.PRUNE_INTERVAL
        self.assertTrue(batcher.wait(batcher.add('a', 3.0, told='m3'), 10))
        self.assertEqual(['m2', 'm3'],
                         sorted(index_base.told(self.engine)))

    def test_stop_records_what_is_buffered(self):
        batcher = self.batcher(delay=60)
        batcher.add('a', 1.0)
        batcher.stop()
        self.assertEqual({'a': (1.0, 1.0)}, self.marked())

    def test_releases_wait_for_the_release_delay(self):
        batcher = self.batcher(delay=0.01, release_delay=60)
        batcher.add_all(['a'], 1.0, releases=[('a', 'h1', 1)], covered=True)
        time.sleep(0.2)
        self.assertEqual([], self.batches)
        # Kept, a release is there for the next transaction of the same
        # holder to take back.
        self.assertEqual({}, batcher.take_back_releases({'a', 'b'}, 'h2'))
        self.assertEqual({'a': ('h1', 1)},
                         batcher.take_back_releases({'a', 'b'}, 'h1'))
        self.assertEqual({}, batcher.take_back_releases({'a'}, 'h1'))
        batcher.add_all(['c'], 2.0, releases=[('c', 'h1', 2)], covered=True)
        # News is due after the short delay, and takes the releases along.
        batcher.add('d', 3.0)
        deadline = time.monotonic() + 10
        while not self.batches:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.005)
        self.assertEqual([{'a': (1.0, 1.0), 'c': (2.0, 2.0),
                           'd': (3.0, 3.0)}], self.batches)

    def test_releases_alone_are_recorded_after_the_release_delay(self):
        batcher = self.batcher(delay=0.01, release_delay=0.2)
        started = time.monotonic()
        batcher.add_all(['a'], 1.0, releases=[('a', 'h1', 1)], covered=True)
        while not self.marked():
            self.assertLess(time.monotonic() - started, 10)
            time.sleep(0.005)
        self.assertGreaterEqual(time.monotonic() - started, 0.19)

    def test_release_delay_is_never_shorter_than_the_delay(self):
        self.assertEqual(5.0, self.batcher(delay=5.0, release_delay=0.1)
                         .release_delay)
        self.flags(capture_release_delay=7.0, group='nova_ext_index')
        self.assertEqual(7.0, self.batcher(delay=5.0).release_delay)

    def test_retry_cuts_the_pause_after_a_failure_short(self):
        for name in ('BACKOFF', 'MAX_BACKOFF'):
            self.useFixture(fixtures.MockPatchObject(batcher_mod, name,
                                                     3600))
        lock = index_base.lock(self, self.engine.url.database)
        self.flags(capture_timeout=0.05, group='nova_ext_index')
        running = self.batcher(delay=0.001)
        running.add('a', 1.0)
        deadline = time.monotonic() + 10
        while not running.failures and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertEqual(1, running.failures)
        lock.execute('ROLLBACK')
        # Paused for an hour after its failure, but for this.
        running.retry()
        self.assertTrue(running.flush(10))
        self.assertEqual({'a': (1.0, 1.0)}, self.marked())

    def test_a_check_that_does_not_wait_leaves_the_pause(self):
        # As the batcher's own thread checks before it records its
        # holder's row, which a read-only index refuses: were its pause
        # cut short by its own check, it would try again without end.
        for name in ('BACKOFF', 'MAX_BACKOFF'):
            self.useFixture(fixtures.MockPatchObject(batcher_mod, name,
                                                     3600))
        running = self.batcher(delay=0.001)
        tries = []

        def refused(engine, changes, holds=(), releases=(), timeout=None,
                    told=()):
            tries.append(changes)
            # Bounded, so that without the pause the test ends, and fails.
            if len(tries) < 50:
                self.assertFalse(running.recorded_all(0))
            raise db_exc.DBError('attempt to write a readonly database')
        pending.mark.side_effect = refused
        running.add('a', 1.0)
        deadline = time.monotonic() + 10
        while not running.failures and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertEqual(1, running.failures)
        # A heartbeat's check, which waits, has it try again at once.
        self.assertFalse(running.recorded_all(0.5))
        time.sleep(0.5)
        self.assertEqual(2, running.failures)
        self.assertEqual(2, len(tries))
