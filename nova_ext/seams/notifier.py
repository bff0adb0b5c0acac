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
"""Every Nova process: the ``nova_ext`` oslo.messaging notification driver.

Enabled by adding ``nova_ext`` to ``[oslo_messaging_notifications]driver``
in nova.conf; oslo.messaging loads it through the
``oslo.messaging.notify.drivers`` entry point when Nova's ``rpc.init``
builds its notifiers. Nothing of Nova's is changed. Being loaded into
every process, it also starts nova-compute's startup work (compute.py)
and the capture of database writes (db_writes.py).
"""

from oslo_log import log as logging
from oslo_messaging.notify import notifier

# Registers the versioned object nova-compute calls on nova-conductor for
# its startup links (compute.py): the conductor loads nova_ext through this
# driver too.
from nova_ext.compute_ids import host_links  # noqa: F401
from nova_ext import conf as ext_conf
from nova_ext.notifications import base
from nova_ext.notifications import dispatcher
from nova_ext.seams import compute
from nova_ext.seams import db_writes

LOG = logging.getLogger(__name__)


class NovaExtDriver(notifier.Driver):
    """Feeds versioned notifications to the nova_ext dispatcher.

    It must never raise into Nova nor make the emitting thread wait: it only
    puts the notification on the dispatcher's queue.
    """

    def __init__(self, conf, topics, transport):
        super().__init__(conf, topics, transport)
        # A broken or missing consumer raises a NovaExtError naming it.
        # oslo.messaging loads drivers without a failure callback, so
        # stevedore logs that error and the process runs on without this
        # driver (see doc/source/admin/seams.rst, "Failure modes").
        self._dispatcher = dispatcher.get_dispatcher(ext_conf.CONF)
        # The one code nova_ext runs in every process early: the place for
        # nova-compute's startup work, and for capturing the database
        # writes of every process that makes them.
        compute.attach(ext_conf.CONF)
        db_writes.attach(ext_conf.CONF)

    def notify(self, ctxt, message, priority, retry):
        try:
            payload = message.get('payload')
            # With notification_format=both, Nova's legacy notifier loads
            # this driver too; only versioned payloads are for nova_ext.
            if not (isinstance(payload, dict)
                    and 'nova_object.name' in payload):
                return
            self._dispatcher.submit(base.Notification(
                event_type=message['event_type'],
                publisher_id=message['publisher_id'],
                priority=priority,
                payload=payload,
                timestamp=message.get('timestamp'),
                message_id=message.get('message_id'),
                context=ctxt))
        except Exception:
            LOG.exception('nova_ext notification driver failed to queue %s',
                          message.get('event_type'))
