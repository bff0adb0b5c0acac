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
"""nova-ext-indexer's notification endpoint, on a real SQLite index."""

from unittest import mock

import fixtures
from oslo_db import exception as db_exc
import oslo_messaging

from nova_ext.index.feeds import listener
from nova_ext.index.marks import pending
from nova_ext.tests.unit.index import base as index_base


class TestListenerEndpoint(index_base.IndexDBTestCase):

    def setUp(self):
        super().setUp()
        self.sleep = self.useFixture(fixtures.MockPatchObject(
            listener.time, 'sleep')).mock
        self.wake = mock.Mock()
        self.endpoint = listener.Endpoint(self.conf.conf, wake=self.wake)

    def test_a_batch_is_one_transaction(self):
        mark = self.useFixture(fixtures.MockPatchObject(
            pending, 'mark_untold', side_effect=pending.mark_untold)).mock
        result = self.endpoint.info([index_base.message('a'),
                                     index_base.message('b'),
                                     index_base.message('a')])
        self.assertEqual(oslo_messaging.NotificationResult.HANDLED, result)
        self.assertEqual(1, mark.call_count)
        self.assertEqual({'a', 'b'}, set(pending.take(self.engine, 10)))
        self.assertEqual(3, self.endpoint.marked)
        self.wake.assert_called_once_with()

    def test_notifications_their_process_marked_are_not_marked_again(self):
        # 'm-a' and 'm-b' were marked in-process; 'm-c' was not, nor was
        # a notification without an id.
        pending.mark(self.engine, [('a', 1.0), ('b', 1.0)],
                     told=['m-a', 'm-b', 'm-x'])
        pending.unmark(self.engine, pending.take(self.engine, 10))
        result = self.endpoint.info([
            index_base.message('a', message_id='m-a'),
            index_base.message('c', message_id='m-c'),
            index_base.message('d'),
            index_base.message('b', message_id='m-b')])
        self.assertEqual(oslo_messaging.NotificationResult.HANDLED, result)
        self.assertEqual({'c', 'd'}, set(pending.take(self.engine, 10)))
        self.assertEqual((2, 2), (self.endpoint.marked, self.endpoint.told))
        # Each is handed over once: delivered again, it is marked.
        self.assertEqual(['m-x'], list(index_base.told(self.engine)))
        self.endpoint.info([index_base.message('a', message_id='m-a')])
        self.assertIn('a', pending.take(self.engine, 10))

    def test_nothing_to_record(self):
        result = self.endpoint.info(
            [index_base.message('a', 'service.update')])
        self.assertEqual(oslo_messaging.NotificationResult.HANDLED, result)
        self.assertEqual(0, pending.count(self.engine))
        self.wake.assert_not_called()

    def test_failed_batch_is_requeued_after_a_pause(self):
        self.useFixture(fixtures.MockPatchObject(
            pending, 'mark_untold',
            side_effect=db_exc.DBError('index away')))
        batch = [index_base.message('a'), index_base.message('b')]
        for _ in range(7):
            self.assertEqual(oslo_messaging.NotificationResult.REQUEUE,
                             self.endpoint.error(batch))
        self.assertEqual(14, self.endpoint.requeued)
        # Not the index's own yields (sleep(0)) while it reads.
        pauses = [c.args[0] for c in self.sleep.call_args_list
                  if c.args[0]]
        self.assertEqual([0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0], pauses)
        pending.mark_untold.side_effect = None
        self.assertEqual(oslo_messaging.NotificationResult.HANDLED,
                         self.endpoint.error(batch))
        # Back to the shortest pause for the next failure.
        pending.mark_untold.side_effect = db_exc.DBError('index away')
        self.sleep.reset_mock()
        self.endpoint.info(batch)
        self.assertIn(mock.call(0.1), self.sleep.call_args_list)
