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
and several indexers (for availability) share that queue. A notification
is acknowledged only after the change it reports is committed to the
index's pending table; if that fails, the message is requeued and comes
back. The worker then applies pending changes from the cells, and the
reconciler periodically heals what no notification reported.
"""

from oslo_log import log as logging
import oslo_messaging

from nova_ext.index import db
from nova_ext.index import events
from nova_ext.index import pending
from nova_ext.index import reconcile
from nova_ext.index import worker as worker_mod

LOG = logging.getLogger(__name__)

POOL = 'nova-ext-indexer'


class Endpoint(object):
    """Marks instance changes; requeues what it could not record."""

    filter_rule = oslo_messaging.NotificationFilter(
        event_type=r'^instance\.')

    def __init__(self, conf, wake=None):
        self.conf = conf
        self.wake = wake
        self.marked = 0
        self.requeued = 0
        self._failing = False

    def _handle(self, event_type, payload, metadata):
        change = events.change(event_type, payload,
                               (metadata or {}).get('timestamp'))
        if change is None:
            return oslo_messaging.NotificationResult.HANDLED
        try:
            pending.mark(db.get_engine(self.conf), [change])
        except Exception as e:
            self.requeued += 1
            if not self._failing:
                LOG.warning('nova-ext-indexer cannot record changes in the '
                            'index (%s: %s); notifications are requeued '
                            'until it can', type(e).__name__, e)
            self._failing = True
            return oslo_messaging.NotificationResult.REQUEUE
        if self._failing:
            LOG.info('nova-ext-indexer records changes again')
            self._failing = False
        self.marked += 1
        if self.wake is not None:
            self.wake()
        return oslo_messaging.NotificationResult.HANDLED

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        return self._handle(event_type, payload, metadata)

    # Nova sends instance notifications at INFO, and ERROR for failures
    # (instance.*.error); any priority counts.
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
        self.listener = oslo_messaging.get_notification_listener(
            self.transport, targets, [self.endpoint], executor='threading',
            allow_requeue=True, pool=pool)

    def start(self):
        self.listener.start()
        LOG.info('nova-ext-indexer listening on %s (pool %s)',
                 ', '.join(self.conf.notifications.
                           versioned_notifications_topics), POOL)
        if self.reconciler is not None:
            self.reconciler.start()

    def stop(self):
        if self.reconciler is not None:
            # First, so that a pass under way stops at its next cell and
            # hands the lease over rather than leaving it to expire.
            self.reconciler.stop()
        self.listener.stop()
        self.listener.wait()
        if self.worker is not None:
            self.worker.stop()
