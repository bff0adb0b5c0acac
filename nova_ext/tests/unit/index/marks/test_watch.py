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
"""Dead holders told by their beats, on a real SQLite index database."""

import collections
import time

import sqlalchemy as sa

from nova_ext.index.marks import holders
from nova_ext.index.marks import pending
from nova_ext.index.marks import watch
from nova_ext.index import schema
from nova_ext.tests.unit.index import base as index_base


class TestWatch(index_base.IndexDBTestCase):

    def setUp(self):
        super().setUp()
        self.flags(holder_heartbeat_interval=1.0, holder_timeout=10.0,
                   group='nova_ext_index')
        self.watch = watch.Watch(self.conf.conf)
        with self.engine.begin() as conn:
            for name in ('alive', 'dead'):
                conn.execute(sa.insert(schema.HOLDERS).values(
                    holder=name, host='h', pid=1, beats=0, started_at=0.0))
        pending.mark(self.engine, {'a': (1.0, 1.0), 'd': (1.0, 1.0)},
                     [('a', 'alive', 1), ('d', 'dead', 1)])

    def beat(self, name):
        with self.engine.begin() as conn:
            conn.execute(sa.update(schema.HOLDERS).where(
                schema.HOLDERS.c.holder == name).values(
                beats=schema.HOLDERS.c.beats + 1))

    def test_dead_after_its_count_stood_still_for_the_timeout(self):
        # Times of this process's clock only; first sight starts the count.
        self.assertEqual([], self.watch.dead(self.engine, now=1000.0))
        for now in (1002.0, 1005.0, 1009.5):
            self.beat('alive')
            self.assertEqual([], self.watch.dead(self.engine, now=now))
        # Read at most once per heartbeat interval.
        self.assertEqual([], self.watch.dead(self.engine, now=1010.0))
        self.beat('alive')
        self.assertEqual([('dead', 'h', 1, 0)],
                         self.watch.dead(self.engine, now=1010.5))

    def test_settle_releases_the_dead_holders_holds_only(self):
        self.watch.dead(self.engine, now=1000.0)
        taken = pending.take(self.engine, 10)
        self.beat('alive')
        self.watch.dead(self.engine, now=1005.0)
        self.beat('alive')
        self.assertEqual({'d'}, self.watch.settle(self.engine, now=1010.0))
        self.assertEqual([('a', 'alive', 1)], index_base.holds(self.engine))
        # The dead holder's mark renewed: a read taken before does not
        # remove it, one taken after does.
        pending.unmark(self.engine, taken)
        self.assertEqual({'a', 'd'}, set(index_base.held(self.engine)))
        pending.unmark(self.engine, pending.take(self.engine, 10))
        self.assertEqual({'a'}, set(index_base.held(self.engine)))

    def test_only_while_this_process_could_watch(self):
        # After an outage of the index, every count stood still: a holder
        # is dead only once it stood still while this process read.
        self.watch.dead(self.engine, now=1000.0)
        self.watch.dead(self.engine, now=1004.0)
        broken = sa.create_engine('sqlite:////nonexistent/dir/index.db')
        self.assertRaises(sa.exc.OperationalError, self.watch.dead, broken,
                          now=1008.0)
        for now in (1012.0, 1016.0, 1021.0):
            self.assertEqual([], self.watch.dead(self.engine, now=now))
        self.assertEqual(
            ['alive', 'dead'],
            sorted(h[0] for h in self.watch.dead(self.engine, now=1022.0)))

    def test_rows_another_reader_read_are_judged_alike(self):
        # The witness's reads (witness.Witness.observe), without another.
        broken = sa.create_engine('sqlite:////nonexistent/dir/index.db')

        row = collections.namedtuple(
            'Row', 'holder host pid beats vouches')

        def rows(alive_beats):
            return [row('alive', 'h', 1, alive_beats, 0),
                    row('dead', 'h', 1, 0, 0)]
        for n, now in enumerate((1000.0, 1004.0, 1008.0)):
            self.assertEqual([], self.watch.dead(broken, now, rows(n)))
        # A read that failed elsewhere: the count starts again.
        self.watch.unread()
        for n, now in enumerate((1012.0, 1016.0, 1021.0), 3):
            self.assertEqual([], self.watch.dead(broken, now, rows(n)))
        self.assertEqual([('dead', 'h', 1, 0)],
                         self.watch.dead(broken, 1022.0, rows(6)))

    def test_a_read_long_after_the_last_counts_again(self):
        self.watch.dead(self.engine, now=1000.0)
        # More than half holder_timeout without a read.
        self.assertEqual([], self.watch.dead(self.engine, now=1011.0))
        self.watch.dead(self.engine, now=1015.0)
        self.assertEqual([], self.watch.dead(self.engine, now=1020.0))
        self.assertEqual(2, len(self.watch.dead(self.engine, now=1021.0)))

    def test_a_holder_that_beat_meanwhile_is_not_released(self):
        self.assertIsNone(holders.release(self.engine, 'dead', 5))
        self.assertEqual({'d'}, holders.release(self.engine, 'dead', 0))
        self.assertIsNone(holders.release(self.engine, 'dead', 0))


class TestALiveHolderThatCannotRecord(index_base.IndexDBTestCase):

    def test_is_not_taken_for_dead(self):
        # It goes on beating without vouching: its holds count, and the
        # lists of others are Nova's until it has recorded.
        self.flags(holder_heartbeat_interval=0.1, holder_timeout=1.0,
                   group='nova_ext_index')
        lease = holders.Lease(self.conf.conf)
        self.addCleanup(lease.stop)
        lease.ready = lambda timeout: False
        name = lease.ensure(self.engine)
        watching = watch.Watch(self.conf.conf)
        deadline = time.monotonic() + 2.5
        while time.monotonic() < deadline:
            self.assertEqual(set(), watching.settle(self.engine))
            time.sleep(0.05)
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(schema.HOLDERS)).one()
        self.assertEqual((name, 0), (row.holder, row.vouches))
        self.assertGreater(row.beats, 10)
