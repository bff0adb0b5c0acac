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
"""The reconcile lease and loop, on a real SQLite index database file.

Each "process" has an engine of its own on the one file, as separate
indexers would; the cells are stubs (the functional test reconciles real
ones).
"""

import logging
import socket
import threading
import time
from unittest import mock

import fixtures
import sqlalchemy as sa

from nova_ext.index.feeds import listener
from nova_ext.index.marks import holders
from nova_ext.index.repair import reconcile
from nova_ext.index.repair import sync
from nova_ext.index.repair import verify
from nova_ext.index import schema
from nova_ext.index.upkeep import status
from nova_ext.tests.unit import base
from nova_ext.tests.unit.index import base as index_base

INTERVAL = 600


class Cell(object):

    def __init__(self, name):
        self.name, self.uuid = name, name + '-uuid'


def _report(cell, missing=0, stale=0, extra=0, checked=10):
    report = verify.Report(cell)
    report.counts.update(checked=checked, missing=missing, stale=stale,
                         extra=extra, fixed=missing + stale + extra)
    return report


class LeaseTestCase(index_base.IndexDBTestCase):

    def setUp(self):
        super().setUp()
        self.flags(reconcile_interval=INTERVAL, group='nova_ext_index')
        url = self.conf.conf.nova_ext_index.connection
        # Two processes: two engines, two connection pools, one file.
        self.a = self._engine(url)
        self.b = self._engine(url)

    def _engine(self, url):
        engine = sa.create_engine(url)
        self.addCleanup(engine.dispose)
        return engine

    def holder(self, name, pid=1):
        """A live holder's row, as its Lease records it."""
        with self.a.begin() as conn:
            conn.execute(sa.insert(schema.HOLDERS).values(
                holder=name, host='host', pid=pid, beats=0,
                started_at=0.0))
        return name

    def dies(self, name):
        """What a Watch does once the holder's beats stood still."""
        self.assertIsNotNone(holders.release(self.a, name))


class TestLease(LeaseTestCase):

    def test_only_one_acquires(self):
        self.holder('a', pid=7)
        self.holder('b')
        self.assertTrue(reconcile.acquire(self.a, 'a', 0))
        self.assertFalse(reconcile.acquire(self.b, 'b', 0))
        row = reconcile.read(self.b)
        self.assertEqual(('a', 'host/7', 0), (
            row['holder'], row['holder_at'], row['generation']))

    def test_only_one_of_many_racing_acquires(self):
        engines = [self.a, self.b] + [self._engine(str(self.a.url))
                                      for _ in range(4)]
        for i in range(len(engines)):
            self.holder('p%d' % i)
        start = threading.Barrier(len(engines))
        won = []

        def race(i, engine):
            start.wait()
            if reconcile.acquire(engine, 'p%d' % i, 0):
                won.append(i)
        threads = [threading.Thread(target=race, args=(i, e))
                   for i, e in enumerate(engines)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        self.assertEqual(1, len(won), won)
        self.assertEqual('p%d' % won[0], reconcile.read(self.a)['holder'])

    def test_acquire_racing_on_plain_engines(self):
        self.holder('a')
        self.holder('b')
        # pysqlite left to itself begins at the insert: IntegrityError.
        index_base.race_on_insert(
            self, self.a, 'nova_ext_index_reconcile',
            lambda: self.assertTrue(reconcile.acquire(self.b, 'b', 0)))
        self.assertFalse(reconcile.acquire(self.a, 'a', 0))
        self.assertEqual('b', reconcile.read(self.a)['holder'])

    def test_a_dead_holders_lease_is_free(self):
        self.holder('a')
        self.holder('b')
        self.assertTrue(reconcile.acquire(self.a, 'a', 0))
        self.assertFalse(reconcile.acquire(self.b, 'b', 0))
        self.dies('a')
        self.assertIsNone(reconcile.read(self.b)['holder_at'])
        self.assertTrue(reconcile.acquire(self.b, 'b', 0))
        # Should a come back under its old name, the lease is not its own.
        self.assertFalse(reconcile.holds(self.a, 'a'))
        self.assertFalse(reconcile.release(self.a, 'a'))
        self.assertEqual('b', reconcile.read(self.a)['holder'])

    def test_a_decision_taken_before_a_pass_cannot_take_after_it(self):
        self.holder('a')
        self.holder('b')
        reconcile.acquire(self.a, 'a', 0)
        done = reconcile.Pass('host/1', 100.0)
        done.finished_at, done.purged = 150.0, 0
        self.assertTrue(reconcile.release(self.a, 'a', done))
        # b judged generation 0 due; a gave a pass back since.
        self.assertFalse(reconcile.acquire(self.b, 'b', 0))
        self.assertTrue(reconcile.acquire(self.b, 'b', 1))
        row = reconcile.read(self.a)
        self.assertEqual(('host/1', 150.0, 0, 'a', 'host/1'), (
            row['last_holder'], row['last_finished_at'],
            row['last_result']['drift'], row['timer'], row['timer_at']))

    def test_an_interrupted_pass_is_due_at_once(self):
        self.holder('a')
        reconcile.acquire(self.a, 'a', 0)
        self.assertTrue(reconcile.release(self.a, 'a'))
        row = reconcile.read(self.a)
        self.assertEqual((None, None, 1, None), (
            row['holder'], row['timer'], row['generation'],
            row['last_result']))


class TestReconciler(LeaseTestCase):

    def setUp(self):
        super().setUp()
        self.clock = base.Clock()
        self.cells = [Cell('cell0'), Cell('cell1'), Cell('cell2')]
        self.reports = {'cell1': dict(missing=1, extra=1),
                        'cell2': dict(stale=2)}
        self.verified = []
        self.useFixture(fixtures.MockPatchObject(
            sync, 'cells', side_effect=lambda ctx: list(self.cells)))
        self.useFixture(fixtures.MockPatchObject(
            verify, 'verify_cell', side_effect=self._verify))
        self.purge = self.useFixture(fixtures.MockPatchObject(
            verify, 'purge_tombstones', return_value=3)).mock
        self.log = self.useFixture(fixtures.FakeLogger(
            name=reconcile.__name__, level=logging.INFO))
        self.addCleanup(holders.reset)

    def _verify(self, ctx, conf, cell, fix=False):
        self.assertTrue(fix)
        self.verified.append(cell.name)
        failure = self.reports.get(cell.name)
        if isinstance(failure, Exception):
            raise failure
        return _report(cell, **(failure or {}))

    def reconciler(self, **kwargs):
        """An indexer process: a holder of its own, a clock of its own."""
        lease = holders.Lease(self.conf.conf)
        self.addCleanup(lease.stop)
        kwargs.setdefault('clock', base.Clock(self.clock.now))
        return reconcile.Reconciler(self.conf.conf, lease=lease, **kwargs)

    def test_one_pass_per_interval_timed_by_who_ran_the_last(self):
        # The clocks differ by hours; neither is compared with the other.
        one = self.reconciler()
        two = self.reconciler(clock=base.Clock(self.clock.now + 7200))
        done = one.run_once(mock.sentinel.ctx)
        self.assertEqual((4, 4, 3), (done.drift, done.fixed, done.purged))
        self.assertEqual(['cell0', 'cell1', 'cell2'], self.verified)
        self.assertIsNone(two.run_once(mock.sentinel.ctx))
        two.clock.now += INTERVAL
        one.clock.now += INTERVAL - 1
        self.assertIsNone(two.run_once(mock.sentinel.ctx))
        self.assertIsNone(one.run_once(mock.sentinel.ctx))
        one.clock.now += 1
        self.assertIsNotNone(one.run_once(mock.sentinel.ctx))
        self.assertIsNone(two.run_once(mock.sentinel.ctx))
        self.assertEqual(6, len(self.verified))
        self.assertEqual(2, self.purge.call_count)
        row = reconcile.read(self.a)
        self.assertIsNone(row['holder'])
        self.assertEqual(one.lease.name, row['timer'])
        self.assertEqual('%s/%d' % (socket.gethostname(), one.lease.pid),
                         row['last_holder'])
        self.assertEqual(
            {'cell': 'cell1', 'checked': 10, 'drift': 2, 'missing': 1,
             'stale': 0, 'extra': 1, 'fixed': 2},
            row['last_result']['cells'][1])
        self.assertIn('drift 4, fixed 4; cell0 drift 0 fixed 0 of 10, '
                      'cell1 drift 2 fixed 2 of 10, cell2 drift 2 fixed 2 '
                      'of 10, 3 tombstones purged', self.log.output)

    def test_others_go_on_if_the_timer_stops_passing(self):
        one, two = self.reconciler(), self.reconciler()
        one.run_once(mock.sentinel.ctx)
        self.assertIsNone(two.run_once(mock.sentinel.ctx))
        # one lives on but its loop does not run passes any more.
        two.clock.now += 2 * INTERVAL - 1
        self.assertIsNone(two.run_once(mock.sentinel.ctx))
        two.clock.now += 1
        self.assertIsNotNone(two.run_once(mock.sentinel.ctx))

    def test_a_gone_timer_hands_over_at_once(self):
        one, two = self.reconciler(), self.reconciler()
        one.run_once(mock.sentinel.ctx)
        self.assertIsNone(two.run_once(mock.sentinel.ctx))
        self.dies(one.lease.name)
        self.assertIsNotNone(two.run_once(mock.sentinel.ctx))
        self.assertEqual(two.lease.name, reconcile.read(self.a)['timer'])

    def test_a_holder_that_died_in_its_pass_hands_over(self):
        dead = self.holder('dead')
        self.assertTrue(reconcile.acquire(self.b, dead, 0))
        heir = self.reconciler()
        heir.clock.now += 10 * INTERVAL
        self.assertIsNone(heir.run_once(mock.sentinel.ctx))
        self.dies(dead)
        self.assertIsNotNone(heir.run_once(mock.sentinel.ctx))
        self.assertEqual(heir.lease.name, reconcile.read(self.a)['timer'])

    def test_a_failing_cell_does_not_stop_the_others(self):
        self.reports['cell1'] = RuntimeError('cell1 is down')
        self.purge.side_effect = RuntimeError('index busy')
        one = self.reconciler()
        done = one.run_once(mock.sentinel.ctx)
        self.assertEqual(['cell0', 'cell1', 'cell2'], self.verified)
        self.assertEqual(['cell1'], done.failed)
        self.assertEqual(2, done.drift)
        self.assertIn('cell1 FAILED, purge FAILED', self.log.output)
        self.assertIn('cell1 is down', self.log.output)
        # The pass finished: the failed cell waits for the next one.
        self.assertEqual(one.lease.name, reconcile.read(self.a)['timer'])
        self.assertIsNone(one.run_once(mock.sentinel.ctx))

    def test_stopped_pass_hands_over_at_once(self):
        one = self.reconciler()

        def stop_during_first(ctx, conf, cell, fix):
            one.stop(timeout=0)
            return self._verify(ctx, conf, cell, fix)
        verify.verify_cell.side_effect = stop_during_first
        done = one.run_once(mock.sentinel.ctx)
        self.assertTrue(done.interrupted)
        self.assertEqual(['cell0'], self.verified)
        self.assertFalse(self.purge.called)
        # Not recorded as a pass, and still due: the next indexer goes on.
        self.assertIsNone(reconcile.read(self.a)['last_result'])
        self.assertIsNotNone(self.reconciler().run_once(
            mock.sentinel.ctx))

    def test_lost_lease_stops_the_pass(self):
        self.flags(holder_heartbeat_interval=0.1, group='nova_ext_index')
        slow = self.reconciler()
        other = self.holder('other')

        def taken_over(ctx, conf, cell, fix):
            # slow stalls past holder_timeout and is taken for dead;
            # another indexer takes the lease.
            self.dies(slow.lease.name)
            self.assertTrue(reconcile.acquire(self.b, other, 0))
            time.sleep(0.5)
            return self._verify(ctx, conf, cell, fix)
        verify.verify_cell.side_effect = taken_over
        done = slow.run_once(mock.sentinel.ctx)
        self.assertTrue(done.interrupted)
        self.assertEqual(['cell0'], self.verified)
        self.assertIn('taken for dead', self.log.output)
        self.assertIn('lost its lease', self.log.output)
        self.assertEqual('other', reconcile.read(self.a)['holder'])

    def test_loop_survives_errors_and_stops_promptly(self):
        self.flags(reconcile_interval=1, group='nova_ext_index')
        sync.cells.side_effect = [RuntimeError('API database away'),
                                  self.cells, self.cells, self.cells]
        looping = self.reconciler(clock=time.monotonic)
        looping.start()
        self.addCleanup(looping.stop)
        deadline = time.monotonic() + 20
        while looping.passes < 1:
            self.assertLess(time.monotonic(), deadline, self.log.output)
            time.sleep(0.05)
        started = time.monotonic()
        self.assertTrue(looping.stop())
        self.assertLess(time.monotonic() - started, 2)
        self.assertIn('API database away', self.log.output)
        self.assertIn('nova_ext index reconcile failed; next try in 1 s',
                      self.log.output)


class TestStatusLine(LeaseTestCase):

    def test_lines(self):
        self.assertEqual('no pass finished yet',
                         status._reconcile_line(None))
        engine = self.engine
        self.holder('h', pid=4)
        reconcile.acquire(engine, 'h', 0)
        self.assertEqual('no pass finished yet; running on host/4',
                         status._reconcile_line(reconcile.read(engine)))
        done = reconcile.Pass('host/4', 100.0)
        done.finished_at, done.purged = time.time(), 0
        done.add(_report(Cell('cell1'), stale=2))
        done.failed.append('cell2')
        reconcile.release(engine, 'h', done)
        self.assertRegex(
            status._reconcile_line(reconcile.read(engine), 600),
            r'^last pass \d+ s ago by host/4: drift 2, fixed 2, cells '
            r'failed: cell2; next 600 s after it, timed by host/4$')
        self.dies('h')
        self.assertRegex(
            status._reconcile_line(reconcile.read(engine), 600),
            r'; due now \(its timer is gone\)$')
        self.holder('i', pid=5)
        reconcile.acquire(engine, 'i', 1)
        self.dies('i')
        self.assertRegex(status._reconcile_line(reconcile.read(engine)),
                         r'; due now$')


class TestIndexerWiring(index_base.IndexDBTestCase):

    def indexer(self, interval=INTERVAL, **kwargs):
        conf = mock.Mock()
        conf.nova_ext_index.reconcile_interval = interval
        conf.notifications.versioned_notifications_topics = ['versioned']
        with mock.patch('oslo_messaging.get_notification_listener'), \
                mock.patch.object(listener.worker_mod, 'Worker'):
            return listener.Indexer(conf, transport=mock.Mock(), **kwargs)

    def test_reconciles_with_the_worker_only(self):
        self.assertIsNotNone(self.indexer().reconciler)
        self.assertIsNone(self.indexer(run_worker=False).reconciler)
        self.assertIsNone(self.indexer(run_reconcile=False).reconciler)
        self.assertIsNone(self.indexer(interval=0).reconciler)
