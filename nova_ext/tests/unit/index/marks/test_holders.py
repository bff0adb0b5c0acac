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
"""Holders of marks, on a real SQLite index database."""

import os
import threading
import time

import sqlalchemy as sa

from nova_ext.index.marks import holders
from nova_ext.index import schema
from nova_ext.tests.unit.index import base as index_base


def without_heartbeat(lease):
    """``lease`` never starts its heartbeat thread: beats are the test's."""
    lease._thread = threading.Thread(target=lambda: None)
    lease._thread.start()
    return lease


class TestLease(index_base.IndexDBTestCase):

    def setUp(self):
        super().setUp()
        self.flags(holder_heartbeat_interval=0.1, holder_timeout=1.0,
                   group='nova_ext_index')
        self.addCleanup(holders.reset)

    def beats(self, column='beats'):
        with self.engine.connect() as conn:
            return dict(conn.execute(sa.select(
                schema.HOLDERS.c.holder, schema.HOLDERS.c[column])).all())

    def test_recorded_once_then_counts_up(self):
        lease = holders.get_lease(self.conf.conf)
        self.assertIs(lease, holders.get_lease(self.conf.conf))
        self.assertEqual({}, self.beats())
        self.assertFalse(lease.current(lease.name))
        name = lease.ensure(self.engine)
        self.assertEqual(name, lease.ensure(self.engine))
        self.assertTrue(lease.current(name))
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(schema.HOLDERS)).one()
        self.assertEqual((name, os.getpid()), (row.holder, row.pid))
        deadline = time.monotonic() + 10
        while self.beats()[name] < 3:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.01)
        self.assertNotEqual(lease.token(), lease.token())

    def test_taken_for_dead_it_takes_a_new_name(self):
        lease = holders.Lease(self.conf.conf)
        self.addCleanup(lease.stop)
        without_heartbeat(lease)
        name = lease.ensure(self.engine)
        with self.engine.begin() as conn:
            conn.execute(sa.delete(schema.HOLDERS))
        self.assertFalse(lease.beat())
        self.assertEqual(1, lease.lost)
        self.assertFalse(lease.current(name))
        self.assertNotEqual(name, lease.name)
        self.assertEqual({}, self.beats())
        # The next hold records the new name first.
        self.assertEqual(lease.name, lease.ensure(self.engine))
        self.assertEqual([lease.name], list(self.beats()))

    def test_it_leaves_and_comes_back_under_a_new_name(self):
        # A Nova service of the process stopped (oslo.service leaves by
        # os._exit next): its row goes at once.
        lease = holders.Lease(self.conf.conf)
        name = lease.ensure(self.engine)
        lease.leave()
        self.assertEqual({}, self.beats())
        self.assertFalse(lease.current(name))
        self.assertEqual(0, lease.lost)
        # Restarted in the same process (SIGHUP): a new row, beating.
        again = lease.ensure(self.engine)
        self.addCleanup(lease.stop)
        self.assertNotEqual(name, again)
        deadline = time.monotonic() + 10
        while self.beats().get(again, 0) < 2:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.01)
        self.assertEqual([again], list(self.beats()))

    def test_recorded_with_a_first_vouch_if_everything_is_recorded(self):
        lease = holders.Lease(self.conf.conf)
        self.addCleanup(lease.stop)
        without_heartbeat(lease)
        lease.ready = lambda timeout: True
        name = lease.ensure(self.engine)
        self.assertEqual(1, self.beats('vouches')[name])
        other = holders.Lease(self.conf.conf)
        self.addCleanup(other.stop)
        without_heartbeat(other)
        other.ready = lambda timeout: False
        name = other.ensure(self.engine)
        self.assertEqual(0, self.beats('vouches')[name])

    def test_vouches_only_once_everything_is_recorded(self):
        lease = holders.Lease(self.conf.conf)
        self.addCleanup(lease.stop)
        without_heartbeat(lease)
        asked = []
        lease.ready = lambda timeout: asked.append(timeout) or False
        name = lease.ensure(self.engine)
        # It lives: it beats, without vouching.
        self.assertTrue(lease.beat())
        self.assertEqual((1, 0), (self.beats()[name],
                                  self.beats('vouches')[name]))
        # Asked with half an interval to record in.
        self.assertIn(0.05, asked)
        lease.ready = lambda timeout: True
        self.assertTrue(lease.beat())
        self.assertEqual((2, 1), (self.beats()[name],
                                  self.beats('vouches')[name]))


class TestFence(index_base.IndexDBTestCase):
    """A write the index could not take, held back after its commit."""

    def setUp(self):
        super().setUp()
        self.flags(holder_heartbeat_interval=0.5, holder_timeout=10.0,
                   group='nova_ext_index')
        self.lease = holders.Lease(self.conf.conf)
        self.addCleanup(self.lease.stop)
        without_heartbeat(self.lease)
        # Recorded with changes unrecorded: no beat.
        self.clean = False
        self.lease.ready = lambda timeout: self.clean
        self.lease.ensure(self.engine)
        self.clean = True

    def test_its_row_recorded_without_a_vouch_counts_as_one(self):
        # A reader that read just before the row was recorded lists from
        # the index for a window after that read, unaware of it.
        started = time.monotonic()
        self.lease.fence(lambda: False)
        self.assertGreaterEqual(time.monotonic() - started, 0.9)
        # Long after it, no wait.
        self.assertLess(self.lease.fence(lambda: False), 0.05)

    def test_unknown_to_the_others_it_waits_for_its_changes(self):
        # Its row not recorded: no reader can wait for it.
        unknown = holders.Lease(self.conf.conf)
        until = time.monotonic() + 0.3
        waited = unknown.fence(lambda: time.monotonic() >= until)
        self.assertGreaterEqual(waited, 0.25)
        self.assertLess(waited, 0.9)
        # As long as after a beat, at most.
        waited = unknown.fence(lambda: False)
        self.assertGreaterEqual(waited, 1.0)
        self.assertLess(waited, 1.5)

    def test_its_row_recorded_with_a_beat_counts_as_one(self):
        other = holders.Lease(self.conf.conf)
        self.addCleanup(other.stop)
        without_heartbeat(other)
        other.ensure(self.engine)
        started = time.monotonic()
        other.fence(lambda: False)
        self.assertGreaterEqual(time.monotonic() - started, 0.9)

    def test_until_the_last_beat_vouches_no_more(self):
        # The beat vouches at its end, which comes after this moment.
        before = time.monotonic()
        self.assertTrue(self.lease.beat())
        waited = self.lease.fence(lambda: False)
        # Two heartbeat intervals after the beat, by this clock.
        self.assertGreaterEqual(time.monotonic() - before, 1.0)
        self.assertLess(waited, 1.0 + 0.5)

    def test_or_until_its_changes_are_recorded(self):
        self.assertTrue(self.lease.beat())
        until = time.monotonic() + 0.2
        waited = self.lease.fence(lambda: time.monotonic() >= until)
        self.assertGreaterEqual(waited, 0.15)
        self.assertLess(waited, 0.6)

    def test_a_beat_under_way_counts_as_the_last(self):
        # The beat checked before the change came, and commits after.
        checked, go = threading.Event(), threading.Event()

        def ready(timeout):
            checked.set()
            go.wait(10)
            return True
        self.lease.ready = ready
        beating = threading.Thread(target=self.lease.beat)
        beating.start()
        self.addCleanup(beating.join)
        self.assertTrue(checked.wait(10))
        # Before the timer: its beat ends 0.3 s after this at the earliest.
        started = time.monotonic()
        threading.Timer(0.3, go.set).start()
        self.lease.fence(lambda: False)
        self.assertGreaterEqual(time.monotonic() - started, 0.3 + 1.0)
