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
"""Hands notifications from Nova's emitting threads to nova_ext consumers.

One dispatcher per process: oslo.messaging builds a driver per Notifier
(Nova has two), and both feed the same queue and worker, so consumers see
each notification once, in the order the process emitted them.
"""

import os
import queue
import threading

from oslo_log import log as logging

from nova_ext import notifications
from nova_ext import startup_log

LOG = logging.getLogger(__name__)


_STOP = object()


class Dispatcher(object):

    def __init__(self, consumers, queue_size):
        """:param consumers: ``[(name, base.Consumer)]``."""
        self.consumers = list(consumers)
        self._queue_size = queue_size
        self._lock = threading.Lock()
        self._pid = None
        self._queue = None
        self._worker = None
        self._counts_lock = threading.Lock()
        self.counts = {'received': 0, 'queued': 0, 'dispatched': 0,
                       'dropped': 0, 'failed': 0}

    def _count(self, what):
        with self._counts_lock:
            self.counts[what] += 1

    def submit(self, notification):
        """Queue a notification; never blocks and never raises."""
        self._count('received')
        # Match subscriptions once, here; the worker only delivers.
        targets = [(name, consumer) for name, consumer in self.consumers
                   if consumer.wants(notification.event_type)]
        if not targets:
            return
        try:
            self._ensure_worker().put_nowait((notification, targets))
            self._count('queued')
        except queue.Full:
            self._count('dropped')
            LOG.error('nova_ext notification queue is full (%d); dropped '
                      '%s %s. Consumers are not keeping up.',
                      self._queue_size, notification.event_type,
                      notification.message_id)

    def _ensure_worker(self):
        # A forked worker (uwsgi, oslo.service) inherits the parent's queue
        # but not its thread; start a fresh pair in every process.
        with self._lock:
            if self._pid != os.getpid() or not self._worker.is_alive():
                self._pid = os.getpid()
                self._queue = queue.Queue(self._queue_size)
                self._worker = threading.Thread(
                    target=self._run, args=(self._queue,),
                    name='nova-ext-notifications', daemon=True)
                self._worker.start()
            return self._queue

    def _run(self, work):
        while True:
            item = work.get()
            try:
                if item is _STOP:
                    return
                self._dispatch(*item)
            finally:
                work.task_done()

    def _dispatch(self, notification, targets):
        for name, consumer in targets:
            try:
                consumer.consume(notification)
            except Exception:
                self._count('failed')
                LOG.exception('nova_ext notification consumer %s failed on '
                              '%s %s', name, notification.event_type,
                              notification.message_id)
        self._count('dispatched')

    def drain(self, timeout=None):
        """Wait until every queued notification is consumed.

        For tests and orderly shutdown. Returns False on timeout.
        """
        with self._lock:
            work = self._queue if self._pid == os.getpid() else None
        if work is None:
            return True
        done = threading.Event()
        threading.Thread(target=lambda: (work.join(), done.set()),
                         daemon=True).start()
        return done.wait(timeout)

    def stop(self):
        with self._lock:
            if self._pid == os.getpid() and self._worker.is_alive():
                self._queue.put(_STOP)
                self._worker.join()
            self._pid = None
        for _name, consumer in self.consumers:
            consumer.stop()


_DISPATCHER = None
_DISPATCHER_LOCK = threading.Lock()


def get_dispatcher(conf):
    """The process's dispatcher, built on first use from ``conf``."""
    global _DISPATCHER
    with _DISPATCHER_LOCK:
        if _DISPATCHER is None:
            consumers = notifications.load_consumers(conf)
            _DISPATCHER = Dispatcher(
                consumers, conf.nova_ext_notifications.queue_size)
            # Built in Nova's rpc.init, before the process sets up its
            # logging.
            startup_log.info(LOG, 'nova_ext notification driver attached; '
                             'consumers: %s',
                             [name for name, _ in consumers] or 'none')
        return _DISPATCHER


def reset():
    """Forget the process's dispatcher (after a configuration change)."""
    global _DISPATCHER
    with _DISPATCHER_LOCK:
        if _DISPATCHER is not None:
            _DISPATCHER.stop()
        _DISPATCHER = None
