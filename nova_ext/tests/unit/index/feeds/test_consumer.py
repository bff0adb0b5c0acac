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
"""The in-process consumer and its marker, on a real SQLite index."""

from unittest import mock

import fixtures
from oslo_db import exception as db_exc

from nova_ext.index.feeds import consumer
from nova_ext.index.marks import pending
from nova_ext.index.marks import process
from nova_ext.notifications import base as notifications_base
from nova_ext.notifications import dispatcher
from nova_ext.tests.unit.index import base as index_base


def _notification(uuid, event_type='instance.update'):
    return notifications_base.Notification(
        event_type=event_type, publisher_id='nova-compute:h1',
        priority='INFO', timestamp='2026-11-22 10:00:00.000000',
        message_id='m-%s' % uuid, context={},
        payload={'nova_object.name': 'InstanceUpdatePayload',
                 'nova_object.data': {'uuid': uuid}})


class TestIndexConsumer(index_base.BatcherTestCase):

    def setUp(self):
        super().setUp()
        self.flags(notification_batch_timeout=10.0, group='nova_ext_index')
        # As loaded: the consumer runs where it is configured.
        self.flags(consumers=['index'], group='nova_ext_notifications')
        self.flags(connection='sqlite://', group='api_database')
        self.addCleanup(dispatcher.reset)
        dispatcher.reset()
        self.worker = mock.Mock()
        self.useFixture(fixtures.MockPatchObject(
            process, 'get_worker', return_value=self.worker))
        # Before the worker is unpatched: stopping, the marker wakes it.
        self.addCleanup(process.reset)

    def test_commits_when_nothing_follows(self):
        consumer.IndexConsumer(self.conf.conf).consume(_notification('a'))
        self.assertEqual(['a'], list(self.marked()))
        self.worker.wake.assert_called_once_with()

    def test_records_the_notification_with_its_mark(self):
        consumer.IndexConsumer(self.conf.conf).consume(_notification('a'))
        self.assertEqual(['m-a'], list(index_base.told(self.engine)))

    def test_no_worker_without_the_api_database(self):
        # A cell conductor or a compute cannot locate the instances it
        # marks: it records them and leaves them to the indexer.
        self.flags(connection=None, group='api_database')
        consumer.IndexConsumer(self.conf.conf).consume(_notification('a'))
        self.assertEqual(['a'], list(self.marked()))
        self.worker.wake.assert_not_called()

    def test_goes_on_when_notifications_follow(self):
        self.useFixture(fixtures.MockPatchObject(
            consumer, '_more_queued', return_value=True))
        index = consumer.IndexConsumer(self.conf.conf)
        index.consume(_notification('a'))
        index.consume(_notification('b'))
        index.consume(_notification('x', event_type='service.update'))
        self.assertEqual({}, self.marked())
        self.assertTrue(process.get_batcher(self.conf.conf).flush(10))
        self.assertEqual([{'a': mock.ANY, 'b': mock.ANY}], self.batches)

    def test_never_raises_when_marks_fail(self):
        pending.mark.side_effect = db_exc.DBError('index away')
        consumer.IndexConsumer(self.conf.conf).consume(_notification('a'))
        self.assertEqual(1, process.get_batcher(self.conf.conf).buffered)

    def test_a_marker_without_its_thread_is_replaced(self):
        # As in a forked child, which inherits the object, not the thread.
        first = process.get_batcher(self.conf.conf)
        first.stop()
        self.assertIsNot(first, process.get_batcher(self.conf.conf))

    def test_drained_dispatcher_has_recorded_every_change(self):
        self.flags(consumers=['index'], group='nova_ext_notifications')
        d = dispatcher.get_dispatcher(self.conf.conf)
        for n in range(300):
            d.submit(_notification('u-%d' % n))
        self.assertTrue(d.drain(30))
        self.assertEqual(300, len(self.marked()))
        self.assertEqual(0, d.counts['failed'])
        # Batched: far fewer transactions than notifications.
        self.assertLess(len(self.batches), 100)
