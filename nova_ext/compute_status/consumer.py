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
"""Applies trait callbacks on ``service.update`` notifications.

Nova emits ``service.update`` when a service's ``disabled``,
``disabled_reason`` or ``forced_down`` changes, from the process that
changed it: nova-api for the os-services API, nova-compute when its virt
driver disables itself. With the ``nova_ext`` notification driver attached
there, this consumer brings the service's root providers in line at once
instead of at the next watcher sweep. Whether the compute is alive it
judges by the watcher's rule, never by a timestamp another host wrote:
until the rule knows, the down trait stays as it is, and the service is
followed until it does (``heartbeat_wait``).
"""

import threading

from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects
from nova import servicegroup
import os_traits
from oslo_log import log as logging

from nova_ext.compute_status import engine as engine_mod
from nova_ext.compute_status import heartbeat
from nova_ext.compute_status import heartbeat_wait
from nova_ext.notifications import base

LOG = logging.getLogger(__name__)

#: The trait Nova's os-services API has the compute sync itself, in the
#: request, when its servicegroup API takes the compute for up.
NOVA_SYNCED = frozenset([os_traits.COMPUTE_STATUS_DISABLED])


class ServiceStatusConsumer(base.Consumer):

    event_types = ('service.update',)

    def __init__(self):
        self._wait = None
        self._servicegroup = None
        self._lock = threading.Lock()

    @classmethod
    def enabled(cls, conf):
        section = conf.nova_ext_compute_status
        return bool(section.trait_callbacks) and section.sync_on_service_update

    @property
    def heartbeats(self):
        """The ``HeartbeatWait`` of this process, once it has consumed."""
        return self._wait

    def stop(self):
        with self._lock:
            if self._wait is not None:
                self._wait.stop()

    def _ready(self):
        with self._lock:
            if self._wait is None:
                # Imported here so that listing consumers does not load
                # configuration-dependent modules.
                from nova_ext import conf as ext_conf
                conf = ext_conf.CONF
                self._servicegroup = servicegroup.API()
                self._wait = heartbeat_wait.HeartbeatWait(
                    engine_mod.TraitEngine.from_conf(conf),
                    heartbeat.HeartbeatTracker(
                        self._servicegroup, conf.service_down_time,
                        counted=heartbeat.counted(conf)))
        return self._wait

    def _left_to_nova(self, service):
        """What the first write leaves to Nova's own compute.

        Nova's os-services API saves a change of ``disabled`` (which sends
        this notification), then has the compute sync the disabled trait,
        within the request, when its servicegroup API takes the compute
        for up. A write of the same provider at that moment makes the
        compute's fail (a generation conflict), and its cache then skips
        the next change too. The servicegroup API of this process, asked
        about the same row, answers as Nova's API in it did: a guess at
        Nova's decision, not a judgement of the heartbeat. What Nova did
        not write is written once the compute's heartbeat is judged (its
        next one, for a live compute), and by the watcher's sweeps.
        """
        if self._servicegroup.service_is_up(service):
            return NOVA_SYNCED
        return frozenset()

    def consume(self, notification):
        data = notification.payload.get('nova_object.data', {})
        if data.get('binary') != engine_mod.COMPUTE_BINARY:
            return
        host = data['host']
        wait = self._ready()
        ctxt = nova_context.get_admin_context()
        try:
            mapping = objects.HostMapping.get_by_host(ctxt, host)
        except nova_exception.HostMappingNotFound:
            LOG.debug('service.update for unmapped host %s', host)
            return
        # The service is read back rather than taken from the payload: a
        # later change may already be saved, and the services table is the
        # truth.
        wait.sync(mapping.cell_mapping, host, leave=self._left_to_nova)
