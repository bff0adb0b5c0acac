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

Neutron's API sends a notification (``port.update.end``, ...) for each
change it makes, through oslo.messaging with publisher confirms: by the
time Neutron answers the request that made a change, RabbitMQ has put the
notification in every queue bound to Neutron's notifications. A
:class:`Feed` binds a queue of its own (exclusive, gone with its
connection) to them and counts the changes that can alter the security
groups Nova's detailed list shows: ``epoch`` grows with each such
notification, and with each reconnection, after which what was published
meanwhile is unknown.

:meth:`Feed.confirm` is the proof. It sends a marker into the feed's own
queue and waits until the feed has read it: the queue delivers in order, so
every change Neutron had confirmed before the marker was sent has been
counted by then. Two confirmations that give the same epoch prove that
Neutron made no change between the first and the second, as far as its
feed tells.
"""

import json
import os
import socket
import threading
import urllib.parse
import uuid

import kombu
from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging

from nova_ext.index import backoff

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


def event_type(body):
    """The event type of a notification's message body, or None."""
    if isinstance(body, dict) and 'oslo.message' in body:
        try:
            body = json.loads(body['oslo.message'])
        except (TypeError, ValueError):
            return None
    if isinstance(body, dict):
        event = body.get('event_type')
        return event if isinstance(event, str) else None
    return None


def changes_groups(event):
    """Whether notification ``event`` (an event type) can alter groups.

    An event type it cannot read counts as a change.
    """
    return event is None or event.startswith(CHANGES)


class Feed(object):
    """Neutron's notifications, read by a thread of this process."""

    def __init__(self, url, exchange='neutron', topics=('notifications',),
                 ssl=None):
        self.url = kombu_url(url)
        self.exchange = exchange
        self.topics = tuple(topics)
        self.ssl = ssl
        #: Grows with each change counted and each reconnection.
        self.epoch = 0
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
                failures += 1
                (LOG.warning if failures == 1 else LOG.debug)(
                    'nova_ext cannot read Neutron\'s notifications (%s: %s); '
                    'detailed server lists ask Neutron each time meanwhile',
                    type(e).__name__, e)
            self._lost()
            self._stopped.wait(_pause(failures) if failures else 0.1)

    def _consume(self):
        with self._connection(_HEARTBEAT) as conn:
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
                    self._cond.notify_all()
                LOG.info('nova_ext reads Neutron\'s notifications (exchange '
                         '%s, topics %s)', self.exchange,
                         ', '.join(self.topics))
                while not self._stopped.is_set():
                    try:
                        conn.drain_events(timeout=_POLL)
                    except socket.timeout:
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
            with self._cond:
                self.epoch += 1
            LOG.debug('nova_ext: Neutron notified %s', event)

    def _undecodable(self, message, error):
        # What cannot be read could be a change.
        with self._cond:
            self.epoch += 1
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
            connected, or the marker not back in time): no proof then.
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


_LOCK = threading.Lock()
_FEEDS = {}


def feed(conf):
    """This process's feed of ``[nova_ext_instance_list]``, or None.

    Made and started on first use: None until ``neutron_feed_url`` is set.
    """
    group = conf.nova_ext_instance_list
    if not group.neutron_feed_url:
        return None
    # A process forked from one that read the feed has no thread reading.
    key = (os.getpid(), group.neutron_feed_url, group.neutron_feed_exchange,
           tuple(group.neutron_feed_topics))
    with _LOCK:
        found = _FEEDS.get(key)
        if found is None:
            found = _FEEDS[key] = Feed(key[1], key[2], key[3],
                                       ssl=_ssl(conf))
        return found


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
    with _LOCK:
        feeds = list(_FEEDS.values())
        _FEEDS.clear()
    for found in feeds:
        found.stop()
