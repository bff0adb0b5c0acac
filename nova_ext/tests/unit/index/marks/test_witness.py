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
"""Which holders vouched lately, on a real SQLite index database."""

import threading
import time

import sqlalchemy as sa

from nova_ext.index.marks import holders
from nova_ext.index.marks import witness
from nova_ext.index import schema
from nova_ext.tests.unit.index import base as index_base


class TestWitness(index_base.IndexDBTestCase):

    def setUp(self):
        super().setUp()
        self.flags(holder_heartbeat_interval=1.0, holder_timeout=10.0,
                   group='nova_ext_index')
        self.now = 1000.0
        self.witness = witness.Witness(self.conf.conf, clock=lambda: self.now)
        self.add('a')

    def add(self, name):
        with self.engine.begin() as conn:
            conn.execute(sa.insert(schema.HOLDERS).values(
                holder=name, host='h', pid=1, beats=0, started_at=0.0))

    def vouch(self, name):
        with self.engine.begin() as conn:
            conn.execute(sa.update(schema.HOLDERS).where(
                schema.HOLDERS.c.holder == name).values(
                vouches=schema.HOLDERS.c.vouches + 1))

    def beat(self, name):
        # Alive, and not vouching.
        with self.engine.begin() as conn:
            conn.execute(sa.update(schema.HOLDERS).where(
                schema.HOLDERS.c.holder == name).values(
                beats=schema.HOLDERS.c.beats + 1))

    def read(self, at):
        self.now = at
        self.witness.observe(self.engine)

    def test_not_read_yet(self):
        self.assertIsNone(self.witness.silent())
        self.assertIsNone(self.witness.last_read)

    def test_a_vouch_seen_between_two_reads_holds_from_the_first(self):
        self.read(1000.0)
        # Seen once: it may have stopped beating long ago.
        self.assertEqual(['a'], self.witness.silent())
        self.vouch('a')
        self.read(1000.25)
        # Beat after the read of 1000.0 began: two intervals from then.
        self.assertEqual([], self.witness.silent(now=1001.9))
        self.assertEqual([], self.witness.silent(now=1002.0))
        self.assertEqual(['a'], self.witness.silent(now=1002.1))
        # Reads that show no vouch hold nothing more.
        self.read(1001.5)
        self.assertEqual(['a'], self.witness.silent(now=1002.1))
        self.vouch('a')
        self.read(1001.75)
        self.assertEqual([], self.witness.silent(now=1003.4))

    def test_a_holder_new_since_the_last_read_counts_from_nought(self):
        self.read(1000.0)
        self.vouch('a')
        self.read(1000.25)
        # Recorded without a vouch (it had changes unrecorded then).
        self.add('b')
        self.read(1000.5)
        self.assertEqual(['b'], self.witness.silent())
        self.vouch('b')
        self.read(1000.75)
        self.assertEqual([], self.witness.silent())
        # Recorded with its first vouch (Lease.ensure), or vouched since.
        self.add('c')
        self.vouch('c')
        self.read(1001.0)
        # From the read before it was seen: 1000.75.
        self.assertEqual(['a', 'b'], self.witness.silent(now=1002.75))
        self.assertEqual(['a', 'b', 'c'], self.witness.silent(now=1002.8))

    def test_a_read_holds_as_long_as_a_vouch_seen_in_it(self):
        self.read(1000.0)
        self.vouch('a')
        self.read(1000.25)
        self.assertEqual([], self.witness.silent(now=1002.0))
        self.assertEqual([], self.witness.silent(own='a', now=1002.25))
        # No read since: a holder recorded after it is unknown here.
        self.assertIsNone(self.witness.silent(own='a', now=1002.3))
        self.assertEqual(1000.25, self.witness.last_read)

    def test_a_holder_there_at_the_first_read_waits_for_a_vouch(self):
        self.vouch('a')
        self.read(1000.0)
        self.read(1000.25)
        self.assertEqual(['a'], self.witness.silent())

    def test_a_beat_without_a_vouch_vouches_for_nothing(self):
        self.read(1000.0)
        self.beat('a')
        self.read(1000.25)
        self.assertEqual(['a'], self.witness.silent())

    def test_its_own_holder_is_not_waited_for(self):
        self.read(1000.0)
        self.assertEqual([], self.witness.silent(own='a'))

    def test_a_holder_gone_is_not_waited_for(self):
        self.read(1000.0)
        self.assertEqual(['a'], self.witness.silent())
        with self.engine.begin() as conn:
            conn.execute(sa.delete(schema.HOLDERS))
        self.read(1000.25)
        self.assertEqual([], self.witness.silent())


class TestReading(index_base.IndexDBTestCase):

    def setUp(self):
        super().setUp()
        self.flags(holder_heartbeat_interval=0.2, holder_timeout=10.0,
                   group='nova_ext_index')
        self.addCleanup(witness.reset)
        self.addCleanup(holders.reset)

    def test_a_live_holder_is_seen_vouching(self):
        lease = holders.get_lease(self.conf.conf)
        lease.ensure(self.engine)
        running = witness.get_witness(self.conf.conf)
        self.assertIs(running, witness.get_witness(self.conf.conf))
        # Read at once, on first use.
        self.assertEqual([lease.name], running.silent())
        deadline = time.monotonic() + 10
        while running.silent() != []:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.02)
        # And one that no longer vouches, soon after.
        lease.ready = lambda timeout: False
        while running.silent() != [lease.name]:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.02)

    def test_a_second_caller_waits_for_the_first_read(self):
        lease = holders.get_lease(self.conf.conf)
        lease.ensure(self.engine)
        running = witness.Witness(self.conf.conf)
        self.addCleanup(running.stop)
        reading, read = threading.Event(), threading.Event()
        real = running.observe

        def observe(engine):
            reading.set()
            read.wait(10)
            return real(engine)
        running.observe = observe
        first = threading.Thread(target=running.start)
        first.start()
        self.assertTrue(reading.wait(10))
        seen = []
        second = threading.Thread(
            target=lambda: seen.append((running.start(), running.silent())))
        second.start()
        second.join(0.2)
        # Not before the first read is over.
        self.assertEqual([], seen)
        read.set()
        first.join(10)
        second.join(10)
        self.assertEqual([(None, [lease.name])], seen)
