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
"""The worker that applies pending marks, with one cell down."""

import logging
import time

import fixtures
import sqlalchemy as sa

from nova_ext.index.apply import worker
from nova_ext.index.marks import pending
from nova_ext.index import schema
from nova_ext.tests.unit.index import base as index_base


class TestWorker(index_base.FailingCellTestCase):

    def worker(self, retry):
        running = worker.Worker(self.conf.conf, retry=retry)
        self.addCleanup(running.stop)
        return running

    def test_failing_marks_wait_for_the_retry(self):
        pending.mark(self.engine, [('down-1', 1.0)])
        running = self.worker(retry=0.2)
        running.wake()
        time.sleep(1.0)
        running.stop()
        # Tried at once, then every 0.2 s, not over and over.
        self.assertLessEqual(self.tried['down-1'], 8)
        self.assertGreaterEqual(self.tried['down-1'], 2)
        self.assertEqual(0, running.applied)
        self.assertEqual(1, pending.count(self.engine))

    def test_other_cells_go_on_while_one_is_down(self):
        # The failing marks are the oldest, and fill more than a batch.
        self.flags(batch_size=2, group='nova_ext_index')
        pending.mark(self.engine, [('down-%d' % i, float(i))
                                   for i in range(5)] + [('up-1', 10.0)])
        running = self.worker(retry=60)
        running.wake()
        self.assertTrue(running.wait_idle(10))
        self.assertEqual(5, pending.count(self.engine))
        self.assertEqual(1, running.applied)
        self.assertEqual(dict.fromkeys(['down-%d' % i for i in range(5)] +
                                       ['up-1'], 1), self.tried)
        # Until the retry, a change of another cell is applied at once,
        # and the failing marks are passed over.
        pending.mark(self.engine, [('up-2', 20.0), ('down-0', 21.0)])
        running.wake()
        self.assertTrue(running.wait_idle(10))
        self.assertEqual(2, running.applied)
        self.assertEqual(5, pending.count(self.engine))
        self.assertEqual(1, self.tried['up-2'])
        self.assertEqual(1, self.tried['down-0'])

    def test_the_sequence_is_pruned_to_its_highest_number(self):
        numbers = [pending.mark(self.engine, [('up-%d' % i, 1.0)])
                   for i in range(3)]
        running = self.worker(retry=60)
        running.wake()
        self.assertTrue(running.wait_idle(10))
        with self.engine.connect() as conn:
            left = [r.id for r in conn.execute(
                sa.select(schema.SEQUENCE))]
        self.assertEqual([numbers[-1]], left)

    def test_an_index_away_is_told_once_and_its_return(self):
        logged = self.useFixture(fixtures.FakeLogger(
            name=worker.__name__, level=logging.DEBUG))
        pending.mark(self.engine, [('up-1', 1.0)])
        table = schema.PENDING.name
        with self.engine.begin() as conn:
            conn.exec_driver_sql('ALTER TABLE %s RENAME TO away' % table)
        running = self.worker(retry=0.05)
        running.wake()
        deadline = time.monotonic() + 10
        while (logged.output.count('still cannot apply') < 3 and
               time.monotonic() < deadline):
            time.sleep(0.05)
        with self.engine.begin() as conn:
            conn.exec_driver_sql('ALTER TABLE away RENAME TO %s' % table)
        running.wake()
        deadline = time.monotonic() + 10
        while 'again' not in logged.output and time.monotonic() < deadline:
            time.sleep(0.05)
        running.stop()
        said = logged.output
        self.assertEqual(
            1, said.count('worker cannot apply pending changes ('), said)
        # A traceback with the first only.
        first, later = said.split('still cannot apply', 1)
        self.assertIn('Traceback', first)
        self.assertNotIn('Traceback', later)
        self.assertGreaterEqual(said.count('still cannot apply'), 3, said)
        self.assertIn('applies pending changes again, after', said)
        self.assertEqual(1, running.applied)
        self.assertEqual(0, pending.count(self.engine))
