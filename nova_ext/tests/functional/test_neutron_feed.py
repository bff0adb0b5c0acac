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
"""Neutron's feed on a real RabbitMQ, notified as Neutron notifies.

The notifications are sent by oslo.messaging's Notifier as Neutron's API
sends them (exchange ``neutron``, topic ``notifications``, messagingv2,
publisher confirms): each ``info`` returns once RabbitMQ has the message,
as Neutron's answer to a change waits for it.
"""

import logging
import time
import uuid

import fixtures
import kombu
from oslo_context import context
from oslotest import base

from nova_ext.instance_list.render import neutron_feed
from nova_ext.tests.functional import rabbit

WAIT = 10
#: The feed's call_timeout here: how long it proves nothing after it binds
#: its queue, or after a change started that has not ended.
CALL_TIMEOUT = 1.0
#: The AMQP heartbeat of a feed whose connection is watched here, in
#: seconds: RabbitMQ closes a connection it hears nothing from for about
#: twice as long.
HEARTBEAT = 2
#: Connections closed one after another by RabbitMQ in a test: counted as
#: failures in a row, the fifth would wait 8 s before it reconnects.
LOSSES = 5


def neutron_notifier(test, url):
    """A notifier that publishes as Neutron's API does.

    Its transport is cleaned up with ``test``.
    """
    return rabbit.notifier(test, url, 'neutron', 'network.test',
                           'notifications')


def proven(test, feed):
    """The feed's first proof, once its call timeout after binding is over.

    What may have started before it bound its queue counts as under way
    until then.
    """
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        epoch = feed.confirm(WAIT)
        if epoch is not None:
            return epoch
        time.sleep(0.1)
    test.fail('the feed proved nothing')


def request(name):
    """The context of one of Neutron's API requests, as its notifier sends.

    Both notifications of a change carry its request id (a dict is sent as
    no context at all).
    """
    return context.RequestContext(
        request_id='req-%s-%s' % (name, uuid.uuid4()))


def wait_lost(test, feed):
    """Wait until ``feed`` knows it lost its connection (closed by RabbitMQ).

    RabbitMQ closes connections after ``rabbitmqctl close_all_connections``
    returns.
    """
    for _ in range(300):
        if not feed.ready:
            return
        time.sleep(0.1)
    test.fail('the feed did not see its connection closed')


class TestNeutronFeed(rabbit.SharedBroker, base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.notifier = neutron_notifier(self, self.url)

    def _feed(self, call_timeout=CALL_TIMEOUT):
        feed = neutron_feed.Feed(self.url, call_timeout=call_timeout)
        self.addCleanup(feed.stop)
        return feed

    def _ready_feed(self):
        # Neutron's exchange exists once Neutron has notified.
        self.notifier.info({}, 'port.create.end', {'port': {}})
        feed = self._feed()
        self.assertTrue(feed.wait_ready(60))
        proven(self, feed)
        return feed

    def test_no_proof_before_neutron_notifies(self):
        feed = self._feed()
        self.assertFalse(feed.wait_ready(2))
        self.assertIsNone(feed.confirm(WAIT))
        # Neutron's first notification declares its exchange: the feed
        # binds to it on its next try.
        self.notifier.info({}, 'network.create.end', {'network': {}})
        self.assertTrue(feed.wait_ready(60))
        self.assertIsNotNone(proven(self, feed))

    def test_no_proof_for_a_while_after_binding(self):
        # A request that started before the queue was bound, and commits
        # after, would show nowhere until its end.
        self.notifier.info({}, 'port.create.end', {'port': {}})
        feed = self._feed(call_timeout=3.0)
        self.assertTrue(feed.wait_ready(60))
        bound = time.monotonic()
        self.assertIsNone(feed.confirm(WAIT))
        self.assertIsNotNone(proven(self, feed))
        self.assertGreaterEqual(time.monotonic() - bound, 3.0 - 0.5)

    def test_no_proof_while_a_change_is_under_way(self):
        # Neutron commits a change between its start and its end, which
        # for a port bound to a host comes seconds later.
        feed = self._ready_feed()
        before = feed.confirm(WAIT)
        first, second = request('first'), request('second')
        self.notifier.info(first, 'port.update.start', {'id': 'p1'})
        self.assertIsNone(feed.confirm(WAIT))
        self.notifier.info(second, 'security_group.update.start', {})
        self.notifier.info(first, 'port.update.end', {'port': {}})
        self.assertIsNone(feed.confirm(WAIT))
        # An end of a request that started before is no proof of others.
        self.notifier.info(request('other'), 'port.delete.end', {})
        self.assertIsNone(feed.confirm(WAIT))
        self.notifier.info(second, 'security_group.update.end', {})
        after = feed.confirm(WAIT)
        self.assertIsNotNone(after)
        self.assertGreater(after, before)
        self.assertEqual(after, feed.confirm(WAIT))

    def test_a_start_never_ended_counts_for_the_call_timeout(self):
        # A request that fails sends no end; nor can a start without a
        # request id be matched with one.
        feed = self._ready_feed()
        for sent_with in (request('failed'), {}):
            self.notifier.info(sent_with, 'port.create.start', {'port': {}})
            started = time.monotonic()
            self.assertIsNone(feed.confirm(WAIT))
            self.assertIsNotNone(proven(self, feed))
            self.assertGreaterEqual(time.monotonic() - started,
                                    CALL_TIMEOUT - 0.2)

    def test_a_confirmed_change_is_counted_before_the_marker(self):
        feed = self._ready_feed()
        changes = ('port.update.end', 'port.delete.end',
                   'security_group.update.end',
                   'security_group_rule.create.end',
                   'rbac_policy.create.end', 'network.delete.end')
        # Right after the notifier returns, without waiting: the proof's
        # order does not depend on the feed's thread being quick.
        for n in range(60):
            before = feed.confirm(WAIT)
            self.assertIsNotNone(before)
            self.assertEqual(before, feed.confirm(WAIT))
            self.notifier.info({}, changes[n % len(changes)], {'n': n})
            after = feed.confirm(WAIT)
            self.assertGreater(after, before, changes[n % len(changes)])

    def test_other_notifications_change_nothing(self):
        feed = self._ready_feed()
        before = feed.confirm(WAIT)
        for event in ('floatingip.update.end', 'router.create.end',
                      'subnet.update.end'):
            self.notifier.info({}, event, {})
        self.assertEqual(before, feed.confirm(WAIT))
        self.notifier.info({}, 'security_group.delete.end', {})
        self.assertEqual(before + 1, feed.confirm(WAIT))

    def test_markers_reach_no_other_reader(self):
        # Another reader of Neutron's notifications (a metering service,
        # say) gets Neutron's messages only.
        url = neutron_feed.kombu_url(self.url)
        self.notifier.info({}, 'port.create.end', {})
        with kombu.Connection(url) as conn:
            queue = kombu.Queue('other', exchange=kombu.Exchange(
                'neutron', type='topic', passive=True),
                routing_key='notifications.*', auto_delete=True)
            got = []
            with conn.Consumer([queue], callbacks=[
                    lambda body, message: got.append(
                        neutron_feed.event_type(body))],
                    accept=['json'], no_ack=True):
                feed = self._ready_feed()
                for _ in range(5):
                    self.assertIsNotNone(feed.confirm(WAIT))
                self.notifier.info({}, 'port.update.end', {})
                while 'port.update.end' not in got:
                    conn.drain_events(timeout=WAIT)
        self.assertEqual(['port.create.end', 'port.update.end'], got)

    def test_a_busy_feed_keeps_its_connection(self):
        # Each detailed page sends a marker: in a busy nova-api the queue
        # is never idle for a poll, and the feed must still send RabbitMQ
        # its heartbeats, or lose its connection, and every page its kept
        # answer, again and again.
        self.notifier.info({}, 'port.create.end', {'port': {}})
        feed = neutron_feed.Feed(self.url, call_timeout=CALL_TIMEOUT,
                                 heartbeat=HEARTBEAT)
        self.addCleanup(feed.stop)
        self.assertTrue(feed.wait_ready(60))
        first = proven(self, feed)
        confirmed = 0
        deadline = time.monotonic() + 6 * HEARTBEAT
        while time.monotonic() < deadline:
            self.assertEqual(first, feed.confirm(WAIT))
            confirmed += 1
            time.sleep(0.05)
        self.assertTrue(feed.ready)
        self.assertGreater(confirmed, 6 * HEARTBEAT)

    def test_each_lost_connection_is_told_and_retried_soon(self):
        # A connection that read its queue and was lost later (RabbitMQ
        # restarted, hours apart) is the first failure of a new run: the
        # feed says so and tries again after the first pause, not after
        # one that grew with every loss since the process started.
        logs = self.useFixture(fixtures.FakeLogger(
            name=neutron_feed.__name__, level=logging.WARNING))
        feed = self._ready_feed()
        for _ in range(LOSSES):
            self.broker._ctl('close_all_connections', '-p', self.vhost,
                             'test: lost')
            wait_lost(self, feed)
            lost = time.monotonic()
            self.assertTrue(feed.wait_ready(60))
            self.assertLess(time.monotonic() - lost, 3.0)
        self.assertEqual(LOSSES, logs.output.count(
            "cannot read Neutron's notifications"))

    def test_a_lost_connection_is_a_change(self):
        feed = self._ready_feed()
        before = feed.confirm(WAIT)
        self.assertIsNotNone(before)
        # What Neutron sends while the feed is away reaches no queue of
        # the feed's: its return must count as a change, though nothing
        # is known to have changed.
        self.broker._ctl('clear_permissions', '-p', self.vhost, 'guest')
        self.broker._ctl('close_all_connections', '-p', self.vhost,
                         'test: lost')
        wait_lost(self, feed)
        self.assertIsNone(feed.confirm(WAIT))
        self.broker._ctl('set_permissions', '-p', self.vhost, 'guest',
                         '.*', '.*', '.*')
        # No proof until the feed reads a queue of its own again.
        self.assertTrue(feed.wait_ready(60))
        after = proven(self, feed)
        self.assertGreater(after, before)
