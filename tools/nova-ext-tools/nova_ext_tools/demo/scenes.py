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
"""The scripted tour. Each scene takes (cloud, report, args).

Scenes talk to the cloud through its public REST API (the harness's API
clients go through nova-api's real WSGI pipeline) and only look at Nova's
databases to show where things are, as an operator would with
nova-manage.
"""

import time

from nova import context as nova_context
from nova import objects
from nova.scheduler import request_filter
from oslo_config import cfg

from nova_ext.notifications import dispatcher
from nova_ext.seams import api as api_ep
from nova_ext.seams import scheduler as scheduler_ep
from nova_ext.tests.functional import fixtures as ext_fixtures

from nova_ext_tools.demo import cell0_rebuild_scene
from nova_ext_tools.demo import compute_ids_scene
from nova_ext_tools.demo import compute_status_scene
from nova_ext_tools.demo import index_scene

CONF = cfg.CONF


def _attached_log_lines(cloud):
    return [line.split('] ', 1)[-1]
            for line in cloud.stdlog.logger.output.splitlines()
            if 'nova_ext attached' in line
            or 'nova_ext notification driver attached' in line]


def seams(cloud, report, args):
    report.section('nova_ext seams, attached through configuration only')
    with open(cloud.nova_ext.paste_ini) as f:
        pipeline = [line for line in f
                    if line.startswith('keystone =')][0].split('=', 1)[1]
    report.line('api-paste.ini pipeline: %s', pipeline.strip())
    report.line('[oslo_messaging_notifications]driver = %s',
                ', '.join(CONF.oslo_messaging_notifications.driver))
    report.line('[filter_scheduler]available_filters = %s',
                ', '.join(CONF.filter_scheduler.available_filters))
    report.line('')
    report.line('What each process logged when it loaded nova_ext:')
    for line in _attached_log_lines(cloud):
        report.line('  %s', line)
    report.line('')
    layers = ext_fixtures.wsgi_layers(cloud.api_fixture.app())
    report.check('nova_ext' in pipeline.split(),
                 'nova-api: the nova_ext filter is in the compute pipeline')
    report.check(api_ep.NovaExtMiddleware not in layers,
                 'nova-api: no handler enabled, so the filter handed back '
                 "Nova's own application (zero cost)")
    report.check(scheduler_ep.attached() == [],
                 'nova-scheduler: attached; no request filter enabled, '
                 "Nova's %d request filters unchanged"
                 % len(request_filter.ALL_REQUEST_FILTERS))
    report.check(dispatcher._DISPATCHER is not None,
                 'notifications: the nova_ext driver was loaded by '
                 'oslo.messaging in this process')


def servers_across_cells(cloud, report, args):
    report.section('Servers across cells, through the REST API')
    hosts = sorted(cloud.computes)
    started = time.monotonic()
    servers = []
    for n in range(args.servers):
        host = hosts[n % len(hosts)]
        servers.append(cloud._create_server(
            name='demo-%02d' % n, host=host, networks='none',
            api=cloud.admin_api, expected_state='ACTIVE'))
    report.line('booted %d servers on %d computes in %.1f s',
                len(servers), len(hosts), time.monotonic() - started)

    started = time.monotonic()
    listed = cloud.admin_api.api_get(
        '/servers/detail?all_tenants=1&limit=1000').body['servers']
    took = time.monotonic() - started
    ctxt = nova_context.get_admin_context()
    rows = []
    for server in sorted(listed, key=lambda s: s['name']):
        mapping = objects.InstanceMapping.get_by_instance_uuid(
            ctxt, server['id'])
        rows.append([server['name'], server['status'],
                     server['OS-EXT-SRV-ATTR:host'],
                     mapping.cell_mapping.name, server['id']])
    report.table(['name', 'status', 'host', 'cell', 'id'], rows)
    report.line('GET /servers/detail?all_tenants=1 answered in %.0f ms '
                '(stock path: [nova_ext_instance_list]driver = %s)',
                took * 1000, CONF.nova_ext_instance_list.driver)
    cells = {row[3] for row in rows}
    report.check(len(listed) == args.servers,
                 'all %d servers listed' % args.servers)
    report.check(all(row[1] == 'ACTIVE' for row in rows),
                 'every server ACTIVE')
    report.check(len(cells) == min(args.cells, args.servers),
                 'servers spread over %d cells' % len(cells))
    ext = dispatcher._DISPATCHER
    received = ext.counts['received'] if ext else 0
    report.check(received > 0,
                 'notification driver saw %d versioned notifications '
                 '(no consumer enabled, so none queued)' % received)


SCENES = (
    ('seams', seams),
    ('servers', servers_across_cells),
    ('index', index_scene.index),
    ('compute-status', compute_status_scene.compute_status),
    ('cell0-rebuild', cell0_rebuild_scene.cell0_rebuild),
    # Last: it NULLs and rewrites links in every cell (and puts them back).
    ('compute-ids', compute_ids_scene.compute_ids_scene),
)
