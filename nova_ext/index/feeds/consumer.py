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
"""The ``index`` notification consumer: keeps the index true in-process.

Enabled by listing ``index`` in ``[nova_ext_notifications]consumers`` of a
Nova process whose ``[oslo_messaging_notifications]driver`` includes
``nova_ext``. It hands each instance change to this process's batcher
(``nova_ext.index.marks.process``), which records changes in the index's
pending table in batches and wakes the index worker. A mark that fails is
kept and retried, never dropped; but the in-process driver has no
acknowledgement to give, and can drop notifications under overload (it
counts them), and what is buffered in memory dies with the process.
Deployments that must not rely on that run ``nova-ext-indexer`` on the
message bus, and the reconcile pass of either.
"""

from oslo_log import log as logging

from nova_ext import conf as ext_conf
from nova_ext.index import db
from nova_ext.index.feeds import events
from nova_ext.index.feeds import service_changes
from nova_ext.index.marks import process
from nova_ext.notifications import base
from nova_ext.notifications import dispatcher

LOG = logging.getLogger(__name__)

CONF = ext_conf.CONF

#: Longest a consumer waits for its change to be committed (see consume()).
COMMIT_WAIT = 5.0


def _more_queued(conf):
    """Whether the dispatcher holds notifications behind this one."""
    counts = dispatcher.get_dispatcher(conf).counts
    return counts['queued'] - counts['dispatched'] > 1


class IndexConsumer(base.Consumer):

    event_types = events.EVENT_TYPES + service_changes.EVENT_TYPES

    def __init__(self, conf=None):
        self.conf = conf or CONF

    def consume(self, notification):
        host = service_changes.host(notification.event_type,
                                    notification.payload)
        if host is not None:
            # Rare (an operator's or a driver's act), and what nova-api
            # keeps is checked against it: recorded now, not batched.
            try:
                service_changes.bump(db.get_engine(self.conf), [host])
            except Exception as e:
                LOG.warning('nova_ext index cannot record a change of the '
                            'services of host %s (%s: %s); what nova-api '
                            'keeps of them expires within '
                            'service_down_time', host, type(e).__name__, e)
            return
        change = events.change(notification.event_type,
                               notification.payload, notification.timestamp)
        if change is None:
            return
        batcher = process.get_batcher(self.conf)
        # Recorded with the mark: nova-ext-indexer, handed the same
        # notification by the message bus, does not mark it again.
        ticket = batcher.add(*change, told=notification.message_id)
        # With notifications queued behind this one, go on: they join the
        # batch. With none, commit now (what came meanwhile joins) and wait
        # for it: an idle process has recorded every change it was told of
        # (the dispatcher's drain(), for tests and orderly shutdown), and a
        # change waits for a batch only while others come.
        if not _more_queued(self.conf):
            batcher.wait(ticket, COMMIT_WAIT)
