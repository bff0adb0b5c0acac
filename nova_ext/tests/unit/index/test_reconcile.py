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
import threading
import time
from unittest import mock

import fixtures
import sqlalchemy as sa

from nova_ext.index import listener
from nova_ext.index import reconcile
from nova_ext.index import status
from nova_ext.index import sync
from nova_ext.index import verify
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


class TestLease(LeaseTestCase):

    def test_only_one_acquires(self):
        self.assertTrue(reconcile.acquire(self.a, 'a', now=100.0))
        self.assertFalse(reconcile.acquire(self.b, 'b', now=100.0))
        self.assertEqual('a', reconcile.read(self.b)['holder'])

    def test_only_one_of_many_racing_acquires(self):
        engines = [self.a, self.b] + [self._engine(str(self.a.url))
                                      for _ in range(4)]
        start = threading.Barrier(len(engines))
        won = []

        def race(i, engine):
            start.wait()
            if reconcile.acquire(engine, 'p%d' % i, now=100.0):
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
        # pysqlite left to itself begins at the insert: IntegrityError.
        index_base.race_on_insert(
            self, self.a, 'nova_ext_index_reconcile',
            lambda: self.assertTrue(reconcile.acquire(self.b, 'b', 100.0)))
        self.assertFalse(reconcile.acquire(self.a, 'a', now=100.0))
        self.assertEqual('b', reconcile.read(self.a)['holder'])

    def test_expiry_hands_over(self):
        self.assertTrue(reconcile.acquire(self.a, 'a', now=100.0, ttl=10))
        self.assertFalse(reconcile.acquire(self.b, 'b', now=109.0, ttl=10))
        # a died: it renews no more, and its lease runs out.
        self.assertTrue(reconcile.acquire(self.b, 'b', now=110.0, ttl=10))
        # Should a come back, the lease is not its own any more.
        self.assertFalse(reconcile.renew(self.a, 'a', now=111.0))
        self.assertFalse(reconcile.release(self.a, 'a', now=111.0))
        self.assertEqual('b', reconcile.read(self.a)['holder'])

    def test_renewed_lease_holds(self):
        reconcile.acquire(self.a, 'a', now=100.0, ttl=10)
        self.assertTrue(reconcile.renew(self.a, 'a', now=108.0, ttl=10))
        self.assertFalse(reconcile.acquire(self.b, 'b', now=115.0, ttl=10))
        self.assertTrue(reconcile.acquire(self.b, 'b', now=118.0, ttl=10))

    def test_release_makes_the_next_pass_due_later(self):
        reconcile.acquire(self.a, 'a', now=100.0)
        done = reconcile.Pass('a', 100.0)
        done.finished_at, done.purged = 150.0, 0
        self.assertTrue(reconcile.release(self.a, 'a', due_at=750.0,
                                          done=done, now=150.0))
        self.assertFalse(reconcile.acquire(self.b, 'b', now=749.0))
        self.assertTrue(reconcile.acquire(self.b, 'b', now=750.0))
        row = reconcile.read(self.a)
        self.assertEqual(('a', 150.0, 0), (row['last_holder'],
                                           row['last_finished_at'],
                                           row['last_result']['drift']))


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

    def _verify(self, ctx, conf, cell, fix=False):
        self.assertTrue(fix)
        self.verified.append(cell.name)
        failure = self.reports.get(cell.name)
        if isinstance(failure, Exception):
            raise failure
        return _report(cell, **(failure or {}))

    def reconciler(self, holder, **kwargs):
        kwargs.setdefault('clock', self.clock)
        return reconcile.Reconciler(self.conf.conf, holder=holder, **kwargs)

    def test_one_pass_per_interval_among_two(self):
        one, two = self.reconciler('one'), self.reconciler('two')
        done = one.run_once(mock.sentinel.ctx)
        self.assertEqual((4, 4, 3), (done.drift, done.fixed, done.purged))
        self.assertEqual(['cell0', 'cell1', 'cell2'], self.verified)
        self.assertIsNone(two.run_once(mock.sentinel.ctx))
        self.clock.now += INTERVAL - 1
        self.assertIsNone(two.run_once(mock.sentinel.ctx))
        self.assertIsNone(one.run_once(mock.sentinel.ctx))
        self.clock.now += 1
        self.assertIsNotNone(two.run_once(mock.sentinel.ctx))
        self.assertIsNone(one.run_once(mock.sentinel.ctx))
        self.assertEqual(6, len(self.verified))
        self.assertEqual(2, self.purge.call_count)
        row = reconcile.read(self.a)
        self.assertIsNone(row['holder'])
        self.assertEqual('two', row['last_holder'])
        self.assertEqual(self.clock.now + INTERVAL, row['due_at'])
        self.assertEqual(
            {'cell': 'cell1', 'checked': 10, 'drift': 2, 'missing': 1,
             'stale': 0, 'extra': 1, 'fixed': 2},
            row['last_result']['cells'][1])
        self.assertIn('nova_ext index reconcile pass by one in 0.0 s: '
                      'drift 4, fixed 4; cell0 drift 0 fixed 0 of 10, '
                      'cell1 drift 2 fixed 2 of 10, cell2 drift 2 fixed 2 '
                      'of 10, 3 tombstones purged', self.log.output)

    def test_dead_holder_hands_over_when_its_lease_expires(self):
        self.assertTrue(reconcile.acquire(self.b, 'dead',
                                          now=self.clock.now, ttl=120))
        heir = self.reconciler('heir', ttl=120)
        self.clock.now += 119
        self.assertIsNone(heir.run_once(mock.sentinel.ctx))
        self.clock.now += 1
        self.assertIsNotNone(heir.run_once(mock.sentinel.ctx))
        self.assertEqual('heir', reconcile.read(self.a)['last_holder'])

    def test_a_failing_cell_does_not_stop_the_others(self):
        self.reports['cell1'] = RuntimeError('cell1 is down')
        self.purge.side_effect = RuntimeError('index busy')
        done = self.reconciler('one').run_once(mock.sentinel.ctx)
        self.assertEqual(['cell0', 'cell1', 'cell2'], self.verified)
        self.assertEqual(['cell1'], done.failed)
        self.assertEqual(2, done.drift)
        self.assertIn('cell1 FAILED, purge FAILED', self.log.output)
        self.assertIn('cell1 is down', self.log.output)
        # The pass finished: the failed cell waits for the next one.
        self.assertEqual(self.clock.now + INTERVAL,
                         reconcile.read(self.a)['due_at'])

    def test_stopped_pass_hands_over_at_once(self):
        one = self.reconciler('one')

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
        self.assertIsNotNone(self.reconciler('two').run_once(
            mock.sentinel.ctx))

    def test_lost_lease_stops_the_pass(self):
        slow = self.reconciler('slow', ttl=0.3, clock=time.time)

        def taken_over(ctx, conf, cell, fix):
            # slow stalls past its lease; another indexer takes it.
            with self.b.begin() as conn:
                conn.execute(sa.update(reconcile.LEASES).values(
                    holder='other'))
            time.sleep(0.5)
            return self._verify(ctx, conf, cell, fix)
        verify.verify_cell.side_effect = taken_over
        done = slow.run_once(mock.sentinel.ctx)
        self.assertTrue(done.interrupted)
        self.assertEqual(['cell0'], self.verified)
        self.assertIn('lost its lease', self.log.output)
        self.assertEqual('other', reconcile.read(self.a)['holder'])

    def test_loop_survives_errors_and_stops_promptly(self):
        self.flags(reconcile_interval=1, group='nova_ext_index')
        sync.cells.side_effect = [RuntimeError('API database away'),
                                  self.cells, self.cells, self.cells]
        looping = self.reconciler('loop', clock=time.time)
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


class TestStatusLine(index_base.IndexDBTestCase):

    def test_lines(self):
        self.assertEqual('no pass finished yet',
                         status._reconcile_line(None))
        engine = self.engine
        reconcile.acquire(engine, 'h:1', now=100.0)
        self.assertEqual('no pass finished yet; running on h:1',
                         status._reconcile_line(reconcile.read(engine),
                                                now=101.0))
        done = reconcile.Pass('h:1', 100.0)
        done.finished_at, done.purged = time.time(), 0
        done.add(_report(Cell('cell1'), stale=2))
        done.failed.append('cell2')
        reconcile.release(engine, 'h:1', due_at=700.0, done=done, now=150.0)
        self.assertRegex(
            status._reconcile_line(reconcile.read(engine), now=200.0),
            r'^last pass \d+ s ago by h:1: drift 2, fixed 2, cells failed: '
            r'cell2; next due in 500 s$')


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
