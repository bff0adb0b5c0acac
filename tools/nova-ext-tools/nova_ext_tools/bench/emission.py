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
"""What emitting a versioned notification costs the emitting thread.

Timed ways, each over rounds of the same ``instance.update``:

* ``rpc``: through ``nova.rpc.get_versioned_notifier()``, as the harness
  wires it. Stock: Nova's fake notifier. nova_ext attached: the same, teed
  (nova_ext.tests.functional.fixtures.Tee) with the real notifier that
  ``rpc.init`` built with the messagingv2 and nova_ext drivers.
* ``notifier``: an oslo.messaging Notifier on the harness's fake transport
  with the drivers of a production nova.conf: messagingv2, plus nova_ext
  when attached.
* ``driver``: when attached, the nova_ext driver's ``notify()`` alone, with
  the arguments a Notifier gives it.
"""

import functools
import uuid

from nova import context as nova_context
from nova import rpc
from oslo_config import cfg
import oslo_messaging
from oslo_serialization import jsonutils
from oslo_utils import timeutils

from nova_ext.notifications import dispatcher
from nova_ext.seams import notifier as notifier_ep
from nova_ext.tests.functional import fixtures as ext_fixtures

from nova_ext_tools.bench import data
from nova_ext_tools.bench import measure

CONF = cfg.CONF

PUBLISHER = 'nova-compute:bench'
EVENT = 'instance.update'
STOCK_DRIVERS = ['messagingv2']


def dispatcher_loaded():
    return dispatcher._DISPATCHER is not None


def measure_all(the_cloud, instance_uuid, count, rounds):
    """Per-notification microseconds of each way, in ``the_cloud``.

    :param instance_uuid: the server the payload describes.
    """
    ctxt = nova_context.get_admin_context()
    payload = data.update_payload(ctxt, instance_uuid)
    serializer = rpc.RequestContextSerializer(rpc.JsonPayloadSerializer())
    attached = ext_fixtures.NOTIFICATIONS in the_cloud.NOVA_EXT_SEAMS
    drivers = STOCK_DRIVERS + (['nova_ext'] if attached else [])
    # A Notifier takes one driver name, or the configured list.
    the_cloud.flags(driver=drivers, group='oslo_messaging_notifications')
    notifier = oslo_messaging.Notifier(
        rpc.NOTIFICATION_TRANSPORT, serializer=serializer,
        topics=CONF.notifications.versioned_notifications_topics)
    emit_args = (ctxt, EVENT, payload)
    ways = [('rpc', 'nova.rpc as the harness wires it',
             rpc.get_versioned_notifier(PUBLISHER).info, emit_args),
            ('notifier', 'oslo.messaging Notifier, drivers %s'
             % ', '.join(drivers), notifier.prepare(PUBLISHER).info,
             emit_args)]
    if attached:
        # nova_ext's own share of an emission, timed alone: whole
        # emissions vary too much to show a few microseconds.
        driver = notifier_ep.NovaExtDriver(
            CONF, [], rpc.NOTIFICATION_TRANSPORT)
        ways.append(('driver', 'NovaExtDriver.notify() alone',
                     driver.notify, _driver_args(serializer, ctxt, payload)))
    out = {'payload_bytes': len(jsonutils.dumps(payload))}
    for name, description, emit, call_args in ways:
        received = _received()
        took = measure.time_calls(
            functools.partial(emit, *call_args), count,
            rounds, warmup=min(count, 200),
            before_round=functools.partial(_forget_sent, the_cloud))
        out[name] = dict(
            measure.summary([t / count for t in took], 1e6),
            description=description, rounds_seconds=took,
            nova_ext_received=_received() - received)
    _forget_sent(the_cloud)
    return out


def _driver_args(serializer, ctxt, payload):
    """notify()'s arguments, as oslo.messaging's Notifier builds them."""
    message = {'message_id': str(uuid.uuid4()), 'publisher_id': PUBLISHER,
               'event_type': EVENT, 'priority': 'INFO',
               'payload': serializer.serialize_entity(ctxt, payload),
               'timestamp': str(timeutils.utcnow())}
    return serializer.serialize_context(ctxt), message, 'INFO', None


def _forget_sent(the_cloud):
    """Drop the notifications the last round left in memory.

    Nothing consumes them here: Nova's fake notifier keeps every one, and
    so does oslo.messaging's in-memory fake transport for messagingv2 (a
    broker would take them away). Left there, they would grow the heap of
    one configuration more than the other's.
    """
    the_cloud.notifier.reset()
    driver = getattr(rpc.NOTIFICATION_TRANSPORT, '_driver', None)
    exchanges = getattr(driver, '_exchange_manager', None)
    if exchanges is None:
        return
    exchange = exchanges.get_exchange(None)
    for topic in CONF.notifications.versioned_notifications_topics:
        target = oslo_messaging.Target(topic='%s.info' % topic)
        while exchange.poll(target, None)[1] is not None:
            pass


def _received():
    ext = dispatcher._DISPATCHER
    return ext.counts['received'] if ext else 0
