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
instead of at the next watcher sweep. It never marks a compute down for a
missed heartbeat: that needs a watcher's window.
"""

import threading

from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects
from nova import servicegroup
from oslo_log import log as logging

from nova_ext.compute_status import engine as engine_mod
from nova_ext.compute_status import heartbeat
from nova_ext.notifications import base

LOG = logging.getLogger(__name__)


class ServiceStatusConsumer(base.Consumer):

    event_types = ('service.update',)

    def __init__(self):
        self._engine = None
        self._up = None
        self._lock = threading.Lock()

    @classmethod
    def enabled(cls, conf):
        section = conf.nova_ext_compute_status
        return bool(section.trait_callbacks) and section.sync_on_service_update

    def _ready(self):
        with self._lock:
            if self._engine is None:
                # Imported here so that listing consumers does not load
                # configuration-dependent modules.
                from nova_ext import conf as ext_conf
                self._engine = engine_mod.TraitEngine.from_conf(
                    ext_conf.CONF)
                self._up = heartbeat.servicegroup_up(servicegroup.API())
        return self._engine

    def consume(self, notification):
        data = notification.payload.get('nova_object.data', {})
        if data.get('binary') != engine_mod.COMPUTE_BINARY:
            return
        host = data['host']
        engine = self._ready()
        ctxt = nova_context.get_admin_context()
        try:
            mapping = objects.HostMapping.get_by_host(ctxt, host)
        except nova_exception.HostMappingNotFound:
            LOG.debug('service.update for unmapped host %s', host)
            return
        # Read the service back rather than trusting the payload: a later
        # change may already be saved, and the services table is the truth.
        with nova_context.target_cell(ctxt, mapping.cell_mapping) as cctxt:
            try:
                service = objects.Service.get_by_compute_host(cctxt, host)
            except nova_exception.ComputeHostNotFound:
                return
            engine.sync_service(cctxt, service, self._up(service))
