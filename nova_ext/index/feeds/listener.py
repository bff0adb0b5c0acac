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
"""The index's message-bus listener: nothing acknowledged is lost.

It listens to Nova's versioned notifications with a pool of its own, so it
gets its own queue on each topic and takes nothing from other consumers,
and several indexers (for availability) share that queue. Notifications
come in batches (``[nova_ext_index]notification_batch_size`` and
``notification_batch_timeout``); the changes of a batch are committed to
the index's pending table in one transaction, and only then are its
messages acknowledged; if that fails, the whole batch is requeued and comes
back. The worker then applies pending changes from the cells, and the
reconciler periodically heals what no notification reported.
"""

import threading
import time

from oslo_log import log as logging
import oslo_messaging

from nova_ext.index.apply import worker as worker_mod
from nova_ext.index import backoff
from nova_ext.index import db
from nova_ext.index.feeds import events
from nova_ext.index.feeds import service_changes
from nova_ext.index.marks import pending
from nova_ext.index.marks import witness
from nova_ext.index.repair import reconcile

LOG = logging.getLogger(__name__)

POOL = 'nova-ext-indexer'

#: Seconds a failed batch is held before it is requeued, doubling with each
#: failure in a row up to the max: a requeued message comes straight back,
#: and would otherwise spin on an unwritable index.
BACKOFF, MAX_BACKOFF = 0.1, 2.0


class Endpoint(object):
    """Records the changes of a batch; requeues what it could not.

    Instance changes are marked pending; service changes move their host's
    generation on (``service_changes``).
    """

    filter_rule = oslo_messaging.NotificationFilter(
        event_type=r'^(instance\.|service\.(create|update|delete)$)')

    def __init__(self, conf, wake=None):
        self.conf = conf
        self.wake = wake
        #: Instance changes marked.
        self.marked = 0
        #: And not marked: their own process had (``told``).
        self.told = 0
        #: Service notifications recorded.
        self.services = 0
        self.requeued = 0
        self._lock = threading.Lock()
        #: Failures in a row.
        self._failures = 0
        self._pause = backoff.pauses(BACKOFF, MAX_BACKOFF)

    def _handle(self, messages):
        # (uuid, when, the notification's id) of the instance changes.
        changes = []
        for m in messages:
            metadata = m['metadata'] or {}
            change = events.change(m['event_type'], m['payload'],
                                   metadata.get('timestamp'))
            if change is not None:
                changes.append(change + (metadata.get('message_id'),))
        hosts = [host for host in (
            service_changes.host(m['event_type'], m['payload'])
            for m in messages) if host is not None]
        if not changes and not hosts:
            return oslo_messaging.NotificationResult.HANDLED
        try:
            # Both are idempotent where it matters: a batch requeued after
            # the first commits is marked again, and a host moved on twice
            # only makes nova-api read its services once more.
            engine = db.get_engine(self.conf)
            marked = set()
            if changes:
                # Not those the process that sent them marked already,
                # after it sent them (told): a read that saw that mark saw
                # the change.
                marked = pending.mark_untold(engine, changes)
            service_changes.bump(engine, hosts)
        except Exception as e:
            with self._lock:
                self.requeued += len(messages)
                if not self._failures:
                    LOG.warning('nova-ext-indexer cannot record changes in '
                                'the index (%s: %s); notifications are '
                                'requeued until it can', type(e).__name__, e)
                self._failures += 1
                pause = self._pause(self._failures)
            time.sleep(pause)
            return oslo_messaging.NotificationResult.REQUEUE
        with self._lock:
            if self._failures:
                LOG.info('nova-ext-indexer records changes again')
            self._failures = 0
            told_count = sum(1 for _u, _w, i in changes if i in marked)
            self.marked += len(changes) - told_count
            self.told += told_count
            self.services += len(hosts)
        if self.wake is not None and changes:
            self.wake()
        return oslo_messaging.NotificationResult.HANDLED

    @property
    def failures(self):
        """Batches in a row that could not be recorded (0: recording)."""
        with self._lock:
            return self._failures

    def info(self, messages):
        return self._handle(messages)

    # Nova sends instance notifications at INFO, and ERROR for failures
    # (instance.*.error); any priority counts. The batch dispatcher calls
    # one method per priority present in a batch: one transaction each.
    audit = debug = warn = error = critical = sample = info


class Indexer(object):
    """The listener, and optionally the worker that applies the changes.

    :param run_reconcile: with the worker, also reconcile every
        ``[nova_ext_index]reconcile_interval`` seconds (0: never).
    """

    def __init__(self, conf, transport=None, run_worker=True, pool=POOL,
                 run_reconcile=True):
        self.conf = conf
        self.worker = worker_mod.Worker(conf) if run_worker else None
        # An indexer that only records changes leaves healing to the ones
        # that apply them.
        self.reconciler = None
        if (run_worker and run_reconcile and
                conf.nova_ext_index.reconcile_interval):
            self.reconciler = reconcile.Reconciler(conf)
        self.endpoint = Endpoint(
            conf, wake=self.worker.wake if self.worker else None)
        self.transport = (transport or
                          oslo_messaging.get_notification_transport(conf))
        targets = [oslo_messaging.Target(topic=topic) for topic in
                   conf.notifications.versioned_notifications_topics]
        index_opts = conf.nova_ext_index
        self.listener = oslo_messaging.get_batch_notification_listener(
            self.transport, targets, [self.endpoint], executor='threading',
            allow_requeue=True, pool=pool,
            batch_size=index_opts.notification_batch_size,
            batch_timeout=index_opts.notification_batch_timeout)

    def start(self):
        self.listener.start()
        LOG.info('nova-ext-indexer listening on %s (pool %s, batches of '
                 'up to %d notifications or %.3f s)',
                 ', '.join(self.conf.notifications.
                           versioned_notifications_topics), POOL,
                 self.conf.nova_ext_index.notification_batch_size,
                 self.conf.nova_ext_index.notification_batch_timeout)
        if self.reconciler is not None:
            self.reconciler.start()
        if self.worker is not None:
            # Reads the holders four times an interval, which keeps this
            # process's watch of dead holders going (``watch``): the marks
            # they held are the worker's to re-read.
            witness.get_witness(self.conf)

    def stop(self):
        if self.reconciler is not None:
            # First, so that a pass under way stops at its next cell and
            # hands the lease over at once.
            self.reconciler.stop()
        self.listener.stop()
        self.listener.wait()
        if self.worker is not None:
            witness.reset()
            self.worker.stop()
