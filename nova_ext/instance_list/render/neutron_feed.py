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
"""Neutron's notifications, as proof that its answers did not change.

Neutron's API sends two notifications for each change it makes, through
oslo.messaging with publisher confirms: ``port.update.start`` before it
makes the change, ``port.update.end`` once it has made it, before it
answers. RabbitMQ has put each in every queue bound to Neutron's
notifications by the time Neutron goes on. A :class:`Feed` binds a queue of
its own (exclusive, gone with its connection) to them and counts the
notifications of changes that can alter the security groups Nova's
detailed list shows: ``epoch`` grows with each, and with each
reconnection, after which what was published meanwhile is unknown.

:meth:`Feed.confirm` is the proof. It sends a marker into the feed's own
queue and waits until the feed has read it: the queue delivers in order, so
every notification Neutron had sent before the marker was sent has been
counted by then. A change is visible in Neutron's answers from its commit,
which comes between its two notifications, well before its ``.end`` when
Neutron binds a port: while a change has started and not ended, there is
no proof. Changes are matched by the request id their notifications carry;
a request that fails sends no ``.end``, so a change is taken as under way
for at most ``call_timeout`` seconds after its start, and so are the
requests that may have started before the feed's queue was bound. Two
confirmations that give the same epoch with no change under way prove that
Neutron made no change between the first and the second, as far as its
feed tells.
"""

import json
import os
import socket
import threading
import time
import urllib.parse
import uuid

import kombu
from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging

from nova_ext.index import backoff
from nova_ext import per_process

LOG = logging.getLogger(__name__)

#: The notifications whose changes can alter what Nova's list shows of
#: Neutron: ports (their device and groups), groups (their names),
#: sharing (RBAC policies: which groups and networks a project sees) and
#: networks (whose owners see the ports on them).
CHANGES = ('port.', 'security_group.', 'security_group_rule.',
           'rbac_policy.', 'network.')

_MARKER = 'nova_ext_feed_marker'
#: Seconds the feed's thread waits for a message before it looks again.
_POLL = 1.0
_HEARTBEAT = 30
_pause = backoff.pauses(0.5, 30)


def kombu_url(url):
    """The kombu URL of an oslo.messaging transport URL (``rabbit://``).

    Its hosts become kombu's ``;``-separated failover URLs.
    """
    # A configuration of its own: parsing registers options in it.
    parsed = oslo_messaging.TransportURL.parse(cfg.ConfigOpts(), url)
    if parsed.transport not in ('rabbit', 'amqp', 'kombu'):
        raise ValueError('the Neutron feed reads RabbitMQ (rabbit://), not '
                         '%s' % parsed.transport)
    vhost = urllib.parse.quote(parsed.virtual_host or '/', safe='')
    urls = []
    for host in parsed.hosts:
        auth = ''
        if host.username:
            auth = '%s:%s@' % (urllib.parse.quote(host.username, safe=''),
                               urllib.parse.quote(host.password or '',
                                                  safe=''))
        urls.append('amqp://%s%s:%d/%s' % (auth, host.hostname,
                                           host.port or 5672, vhost))
    return ';'.join(urls)


def _message(body):
    """A notification's message, out of its messagingv2 envelope, or None."""
    if isinstance(body, dict) and 'oslo.message' in body:
        try:
            body = json.loads(body['oslo.message'])
        except (TypeError, ValueError):
            return None
    return body if isinstance(body, dict) else None


def event_type(body):
    """The event type of a notification's message body, or None."""
    event = (_message(body) or {}).get('event_type')
    return event if isinstance(event, str) else None


def request_id(body):
    """The request id a notification's message body carries, or None."""
    found = (_message(body) or {}).get('_context_request_id')
    return found if isinstance(found, str) and found else None


def changes_groups(event):
    """Whether notification ``event`` (an event type) can alter groups.

    An event type it cannot read counts as a change.
    """
    return event is None or event.startswith(CHANGES)


class Feed(object):
    """Neutron's notifications, read by a thread of this process."""

    def __init__(self, url, exchange='neutron', topics=('notifications',),
                 ssl=None, call_timeout=300.0, heartbeat=_HEARTBEAT):
        """Start reading Neutron's notifications on ``url``.

        :param call_timeout: the seconds a change counts as under way
            without its ``.end``, and after the queue is bound.
        :param heartbeat: the AMQP heartbeat, in seconds, that the feed's
            connection asks RabbitMQ for.
        """
        self.url = kombu_url(url)
        self.exchange = exchange
        self.topics = tuple(topics)
        self.ssl = ssl
        self.call_timeout = call_timeout
        self.heartbeat = heartbeat
        #: This feed's epochs are its own: another's may count the same.
        self.ident = uuid.uuid4().hex
        #: Grows with each change counted and each reconnection.
        self.epoch = 0
        #: The changes under way: {request id: [starts less ends, when the
        #: last started (monotonic)]}; the queue's binding is one of them.
        self._under_way = {}
        self._cond = threading.Condition()
        self._queue = None          # bound and consumed, or None
        self._seen = {}             # marker waited for: read back yet
        self._publisher = None      # (connection, producer), request side
        self._publish_lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='nova-ext-neutron-feed')
        self._thread.start()

    # The feed's thread.

    def _connection(self, heartbeat):
        return kombu.Connection(self.url, heartbeat=heartbeat, ssl=self.ssl,
                                connect_timeout=5,
                                transport_options={'max_retries': 1})

    def _run(self):
        failures = 0
        while not self._stopped.is_set():
            try:
                self._consume()
                failures = 0
            except Exception as e:
                with self._cond:
                    # Until _lost() below, the queue this connection bound.
                    bound = self._queue is not None
                if bound:
                    # A connection that read its queue and was lost later:
                    # the first failure of a new run, logged and retried
                    # soon, not one more of the failures before it.
                    failures = 0
                failures += 1
                (LOG.warning if failures == 1 else LOG.debug)(
                    'nova_ext cannot read Neutron\'s notifications (%s: %s); '
                    'detailed server lists ask Neutron each time meanwhile',
                    type(e).__name__, e)
            self._lost()
            self._stopped.wait(_pause(failures) if failures else 0.1)

    def _consume(self):
        with self._connection(self.heartbeat) as conn:
            conn.ensure_connection(max_retries=1)
            channel = conn.channel()
            # Named here: kombu declares it again when it consumes, which
            # RabbitMQ refuses for names it generated.
            name = 'nova_ext.neutron_feed.%s.%d.%s' % (
                socket.gethostname(), os.getpid(), uuid.uuid4().hex[:12])
            queue = kombu.Queue(name, exclusive=True, auto_delete=True,
                                durable=False)(channel)
            queue.declare()
            # Neutron declares its exchange when it first notifies: until
            # then there is nothing to bind to, and the feed retries.
            for topic in self.topics:
                channel.queue_bind(queue=queue.name, exchange=self.exchange,
                                   routing_key=topic + '.*')
            with kombu.Consumer(channel, [queue], callbacks=[self._read],
                                accept=['json'], no_ack=True,
                                on_decode_error=self._undecodable):
                with self._cond:
                    self.epoch += 1
                    self._queue = queue.name
                    # Requests that started before are not known: as one
                    # start that no end can be matched with.
                    self._count(None, None)
                    self._cond.notify_all()
                LOG.info('nova_ext reads Neutron\'s notifications (exchange '
                         '%s, topics %s)', self.exchange,
                         ', '.join(self.topics))
                # The consumer sends nothing of its own (no acks; markers
                # go out on the publisher's connection), so RabbitMQ hears
                # from it only by its heartbeats: one is due however busy
                # the queue is, or RabbitMQ closes the connection.
                poll = min(_POLL, self.heartbeat / 4.0 or _POLL)
                while not self._stopped.is_set():
                    try:
                        conn.drain_events(timeout=poll)
                    except socket.timeout:
                        pass
                    conn.heartbeat_check()

    def _read(self, body, message):
        if isinstance(body, dict) and _MARKER in body:
            with self._cond:
                # A marker whose request gave up waiting is forgotten.
                if body[_MARKER] in self._seen:
                    self._seen[body[_MARKER]] = True
                    self._cond.notify_all()
            return
        event = event_type(body)
        if changes_groups(event):
            request = request_id(body)
            with self._cond:
                self.epoch += 1
                self._count(event, request)
            LOG.debug('nova_ext: Neutron notified %s (%s)', event, request)

    def _count(self, event, request):
        """Count a change's notification as started or ended (locked)."""
        if event is not None and event.endswith('.end'):
            found = self._under_way.get(request)
            if found is not None:
                found[0] -= 1
                if found[0] <= 0:
                    del self._under_way[request]
            return
        # A start, or what no end can be matched with: under way.
        if request is None or event is None or not event.endswith('.start'):
            request = uuid.uuid4().hex
        # Starts that never end are let go of even where no page asks.
        self._settled()
        found = self._under_way.setdefault(request, [0, 0.0])
        found[0] += 1
        found[1] = time.monotonic()

    def _settled(self):
        """Whether no change is under way (locked)."""
        now = time.monotonic()
        for request, (_, started) in list(self._under_way.items()):
            if now - started >= self.call_timeout:
                del self._under_way[request]
        return not self._under_way

    def _undecodable(self, message, error):
        # What cannot be read could be a change, under way.
        with self._cond:
            self.epoch += 1
            self._count(None, None)
        LOG.debug('nova_ext: a message on Neutron\'s feed could not be '
                  'decoded: %s', error)

    def _lost(self):
        with self._cond:
            if self._queue is not None:
                self.epoch += 1
            self._queue = None
            self._seen.clear()
            self._cond.notify_all()

    # The requests' side.

    @property
    def ready(self):
        """Whether the feed's queue is bound and read."""
        with self._cond:
            return self._queue is not None

    def wait_ready(self, timeout):
        with self._cond:
            return self._cond.wait_for(lambda: self._queue is not None,
                                       timeout)

    def confirm(self, timeout):
        """The epoch once every change confirmed before now is counted.

        :param timeout: seconds to wait for the feed's thread to read the
            marker.
        :returns: the epoch, or None when the feed is not read (not
            connected, or the marker not back in time) or a change is
            under way: no proof then.
        """
        with self._cond:
            queue = self._queue
        if queue is None:
            return None
        marker = uuid.uuid4().hex
        with self._cond:
            self._seen[marker] = False
        try:
            if not self._publish(queue, marker):
                return None
            with self._cond:
                back = self._cond.wait_for(
                    lambda: self._seen.get(marker) or self._queue != queue,
                    timeout)
                if not back or not self._seen.get(marker):
                    return None
                if not self._settled():
                    LOG.debug('nova_ext: Neutron has changes under way')
                    return None
                return self.epoch
        finally:
            with self._cond:
                self._seen.pop(marker, None)

    def _publish(self, queue, marker):
        # Straight into the feed's queue (the default exchange), so that no
        # other reader of Neutron's notifications gets the marker.
        with self._publish_lock:
            for attempt in (1, 2):
                try:
                    if self._publisher is None:
                        conn = self._connection(0)
                        conn.ensure_connection(max_retries=1)
                        self._publisher = (conn, kombu.Producer(
                            conn.channel(), serializer='json'))
                    self._publisher[1].publish(
                        {_MARKER: marker}, exchange='', routing_key=queue,
                        delivery_mode=1)
                    return True
                except Exception as e:
                    self._close_publisher()
                    LOG.debug('nova_ext could not mark Neutron\'s feed '
                              '(attempt %d): %s', attempt, e)
            return False

    def _close_publisher(self):
        if self._publisher is not None:
            try:
                self._publisher[0].release()
            except Exception:  # noqa: closing a broken connection
                pass
            self._publisher = None

    def stop(self):
        """Stop reading, close the connections (tests, shutdown)."""
        self._stopped.set()
        self._thread.join(_POLL * 5)
        with self._publish_lock:
            self._close_publisher()


_FEEDS = per_process.Registry()


def feed(conf):
    """This process's feed of ``[nova_ext_instance_list]``, or None.

    Made and started on first use: None until ``neutron_feed_url`` is set.
    """
    group = conf.nova_ext_instance_list
    if not group.neutron_feed_url:
        return None
    key = (group.neutron_feed_url, group.neutron_feed_exchange,
           tuple(group.neutron_feed_topics))
    return _FEEDS.get(key, lambda: Feed(
        *key, ssl=_ssl(conf), call_timeout=group.neutron_feed_call_timeout))


def _ssl(conf):
    """oslo.messaging's TLS settings for RabbitMQ, where it has them."""
    try:
        rabbit = conf.oslo_messaging_rabbit
        if not rabbit.ssl:
            return None
        options = {}
        for name, key in (('ssl_ca_file', 'ca_certs'),
                          ('ssl_cert_file', 'certfile'),
                          ('ssl_key_file', 'keyfile')):
            if getattr(rabbit, name, None):
                options[key] = getattr(rabbit, name)
        return options or True
    except Exception:  # noqa: the group is oslo.messaging's, if loaded
        return None


def stop_all():
    """Stop every feed of this process (tests)."""
    for found in _FEEDS.clear():
        found.stop()
