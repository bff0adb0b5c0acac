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
"""The notification dispatcher: order, isolation, a bounded queue."""

import threading

from nova_ext.notifications import base as notifications_base
from nova_ext.notifications import dispatcher
from nova_ext.tests import plugins as test_plugins
from nova_ext.tests.unit import base


class Blocking(notifications_base.Consumer):
    event_types = ('*',)

    def __init__(self):
        self.release = threading.Event()
        self.got = []

    def consume(self, notification):
        self.release.wait(10)
        self.got.append(notification.event_type)


class TestDispatcher(base.TestCase):

    def _notification(self, event_type):
        return notifications_base.Notification(
            event_type, 'p', 'INFO', {}, 't', event_type, {})

    def test_order_kept_and_failures_isolated(self):
        recorder = test_plugins.RecordingConsumer()
        d = dispatcher.Dispatcher(
            [('failing', test_plugins.FailingConsumer()),
             ('recorder', recorder)], queue_size=100)
        self.addCleanup(d.stop)
        for n in range(20):
            d.submit(self._notification('instance.e%d' % n))
        d.submit(self._notification('service.update'))
        self.assertTrue(d.drain(10))
        self.assertEqual(['instance.e%d' % n for n in range(20)],
                         [n.event_type for n in recorder.received])
        self.assertEqual(21, d.counts['failed'])
        self.assertEqual(21, d.counts['dispatched'])

    def test_full_queue_drops_without_blocking(self):
        slow = Blocking()
        d = dispatcher.Dispatcher([('slow', slow)], queue_size=2)
        self.addCleanup(d.stop)
        self.addCleanup(slow.release.set)
        done = threading.Event()

        def emit():
            for n in range(10):
                d.submit(self._notification('e%d' % n))
            done.set()
        threading.Thread(target=emit, daemon=True).start()
        # The emitting thread finishes while the consumer is still stuck.
        self.assertTrue(done.wait(5))
        self.assertEqual(10, d.counts['received'])
        self.assertGreaterEqual(d.counts['dropped'], 7)
        self.assertEqual(10, d.counts['queued'] + d.counts['dropped'])
        slow.release.set()
        self.assertTrue(d.drain(10))
        self.assertEqual(d.counts['queued'], len(slow.got))

    def test_unwanted_events_are_not_queued(self):
        d = dispatcher.Dispatcher(
            [('recorder', test_plugins.RecordingConsumer())], queue_size=1)
        d.submit(self._notification('service.update'))
        self.assertEqual(0, d.counts['queued'])
        self.assertIsNone(d._worker)

    def test_stop_stops_every_consumer_after_its_last_notification(self):
        events = []

        class Stopping(notifications_base.Consumer):
            event_types = ('*',)

            def consume(self, notification):
                events.append(notification.event_type)

            def stop(self):
                events.append('stopped')

        d = dispatcher.Dispatcher([('stopping', Stopping())], queue_size=10)
        d.submit(self._notification('service.update'))
        d.stop()
        self.assertEqual(['service.update', 'stopped'], events)
