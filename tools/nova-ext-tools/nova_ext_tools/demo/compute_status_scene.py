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
"""Demo scene: compute status traits keep unusable computes out of placement.

Disables a compute through the os-services API and shows its trait and
where a server lands; then stops another compute's heartbeats and shows
the watcher marking it down, and unmarking it when it reports in again.
The scene switches the capability on for itself and off again at the end.
"""

import datetime
from unittest import mock

from nova import context as nova_context
from nova import objects
from oslo_config import cfg
from oslo_utils import timeutils

from nova_ext.compute_status import engine
from nova_ext.compute_status import trait_callbacks
from nova_ext.compute_status import watcher as watcher_mod
from nova_ext.notifications import dispatcher
from nova_ext.seams import scheduler as scheduler_ep

CONF = cfg.CONF
STATUS = (trait_callbacks.COMPUTE_STATUS_DISABLED,
          trait_callbacks.COMPUTE_STATUS_DOWN)


class _Clock(object):
    """A ``timeutils.utcnow`` that stands still until the scene sets ``now``.

    oslo.utils deprecates its time override in favour of patching
    ``timeutils.utcnow``; this is what it is patched with. Nova's
    servicegroup, the heartbeats' ``updated_at`` and the watcher all read
    the time through it.
    """

    def __init__(self, now):
        self.now = now

    def __call__(self, with_timezone=False):
        if with_timezone:
            return self.now.replace(tzinfo=datetime.timezone.utc)
        return self.now


def _status_traits(cloud, host):
    rp = cloud._get_provider_uuid_by_host(host)
    return sorted(t for t in cloud._get_provider_traits(rp) if t in STATUS)


def _heartbeat(host):
    # What nova-compute's servicegroup heartbeat writes.
    ctxt = nova_context.get_admin_context()
    mapping = objects.HostMapping.get_by_host(ctxt, host)
    with nova_context.target_cell(ctxt, mapping.cell_mapping) as cctxt:
        service = objects.Service.get_by_compute_host(cctxt, host)
        service.report_count += 1
        service.save()


def _boot(cloud, name):
    server = cloud._create_server(name=name, networks='none',
                                  api=cloud.admin_api)
    return server['OS-EXT-SRV-ATTR:host']


def compute_status(cloud, report, args):
    report.section('Compute status traits: disabled and down computes')
    hosts = sorted(cloud.computes)
    if len(hosts) < 2:
        report.line('needs at least 2 computes; skipped')
        return
    cloud.flags(trait_callbacks=['compute-status'],
                group='nova_ext_compute_status')
    cloud.flags(request_filters=['compute-down'], group='nova_ext_scheduler')
    scheduler_ep.attach()
    report.line('[nova_ext_compute_status]trait_callbacks = compute-status')
    report.line('[nova_ext_scheduler]request_filters = compute-down')
    clock = _Clock(timeutils.utcnow())
    # The watcher times its window on this clock too: the scene's seconds.
    watcher = watcher_mod.Watcher(engine.TraitEngine.from_conf(CONF),
                                  CONF.service_down_time, 3600,
                                  clock=lambda: clock().timestamp())
    try:
        with mock.patch.object(timeutils, 'utcnow', clock):
            _scene(cloud, report, watcher, hosts, clock)
    finally:
        cloud.flags(trait_callbacks=[], group='nova_ext_compute_status')
        cloud.flags(request_filters=[], group='nova_ext_scheduler')
        scheduler_ep.attach()


def _scene(cloud, report, watcher, hosts, clock):
    t0 = clock.now
    first, second = hosts[0], hosts[1]
    report.line('start-up reconcile: %s', dict(watcher.sweep()))

    sid = cloud.admin_api.get_services(binary='nova-compute',
                                       host=first)[0]['id']
    cloud.admin_api.put_service(sid, {'status': 'disabled'})
    report.line('')
    report.line('PUT /os-services/%s {"status": "disabled"}', sid)
    report.line('$ openstack resource provider trait list <%s>  '
                '(status traits): %s', first, _status_traits(cloud, first))
    report.check(trait_callbacks.COMPUTE_STATUS_DISABLED in
                 _status_traits(cloud, first),
                 '%s carries COMPUTE_STATUS_DISABLED when the API call '
                 'returns' % first)
    landed = {_boot(cloud, 'status-disabled-%d' % n) for n in range(2)}
    report.check(first not in landed,
                 'servers landed on %s, never on the disabled %s'
                 % (', '.join(sorted(landed)), first))
    cloud.admin_api.put_service(sid, {'status': 'enabled'})
    report.check(_status_traits(cloud, first) == [],
                 'enabled again: the trait is gone')

    report.line('')
    report.line('Stopping %s: its heartbeats stop', second)
    cloud.stop_compute(second)
    # The window starts at the watcher's first look at the stopped compute:
    # a heartbeat it wrote before stopping restarts it, as it should.
    watcher.sweep()
    down_time = CONF.service_down_time
    clock.now = t0 + datetime.timedelta(seconds=down_time - 5)
    for host in hosts:
        if host != second:
            _heartbeat(host)
    watcher.sweep()
    report.check(_status_traits(cloud, second) == [],
                 '%d s later (service_down_time is %d s): not marked yet'
                 % (down_time - 5, down_time))
    clock.now = t0 + datetime.timedelta(seconds=down_time + 1)
    for host in hosts:
        if host != second:
            _heartbeat(host)
    watcher.sweep()
    report.line('after %d s: %s has %s', down_time + 1, second,
                _status_traits(cloud, second))
    report.check(trait_callbacks.COMPUTE_STATUS_DOWN in
                 _status_traits(cloud, second),
                 'the watcher marked %s CUSTOM_COMPUTE_STATUS_DOWN' % second)
    report.line('')
    report.line('%s reports in again', second)
    _heartbeat(second)
    watcher.sweep()
    report.check(_status_traits(cloud, second) == [],
                 'the next sweep removed the down trait')
    ext = dispatcher._DISPATCHER
    if ext is not None:
        ext.drain(10)
