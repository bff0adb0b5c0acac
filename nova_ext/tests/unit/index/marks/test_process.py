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
"""What a process records at its exit (the whole exit, in a process of
its own: ``nova_ext.tests.functional.test_capture_exit``)."""

import time

import fixtures

from nova_ext.index.marks import batcher
from nova_ext.index.marks import holders
from nova_ext.index.marks import process
from nova_ext.tests.unit.index import base as index_base


class TestRecordAtExit(index_base.BatcherTestCase):

    def setUp(self):
        super().setUp()
        self.flags(capture_timeout=0.05, group='nova_ext_index')
        self.log = self.useFixture(fixtures.FakeLogger(
            name=process.__name__))

    def test_what_the_index_takes_costs_no_wait(self):
        running = self.batcher()
        running.add('a', 1.0)
        process.record_at_exit(self.conf.conf, running)
        self.assertEqual({'a': (1.0, 1.0)}, self.marked())
        self.assertEqual('', self.log.output)

    def test_releases_alone_are_not_waited_for(self):
        # The index holds their marks; the watchers renew them once this
        # holder is gone.
        self.flags(max_lag=3600, group='nova_ext_index')
        running = self.batcher(delay=0.001, release_delay=0.001)
        lock = index_base.lock(self, self.engine.url.database)
        running.add_all(['a'], 1.0, releases=[('a', 'h', 1)], covered=True)
        process.record_at_exit(self.conf.conf, running)
        self.assertEqual('', self.log.output)
        lock.execute('ROLLBACK')

    def test_a_batcher_without_its_thread_is_left_alone(self):
        # A forked child runs the hooks its parent registered; its
        # parent's batcher has no thread in it.
        self.flags(max_lag=3600, group='nova_ext_index')
        running = self.batcher()
        running.stop()
        running.add('a', 1.0)
        process.record_at_exit(self.conf.conf, running)
        self.assertEqual('', self.log.output)
        self.assertEqual({}, self.marked())


class TestIndexBack(index_base.BatcherTestCase):

    def test_a_heartbeat_has_a_failed_commit_retried_at_once(self):
        # No other process knows of the changes until they are recorded:
        # not after a pause of a minute, but at the next heartbeat.
        self.flags(holder_heartbeat_interval=0.1, group='nova_ext_index')
        self.useFixture(fixtures.MockPatchObject(batcher, 'BACKOFF', 60))
        self.useFixture(fixtures.MockPatchObject(batcher, 'MAX_BACKOFF', 60))
        self.addCleanup(holders.reset)
        self.addCleanup(process.reset)
        self.fail_first(1)
        running = process.get_batcher(self.conf.conf)
        holders.get_lease(self.conf.conf).ensure(self.engine)
        running.add('a', 1.0)
        deadline = time.monotonic() + 10
        while not self.marked() and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertEqual({'a': (1.0, 1.0)}, self.marked())
        self.assertEqual(1, running.failures)
