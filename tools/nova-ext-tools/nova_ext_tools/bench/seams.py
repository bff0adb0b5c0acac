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
"""``nova-ext-bench seams``: what attaching nova_ext costs stock Nova.

Two clouds are booted one after the other in this process, with the same
arguments and the same servers (see data.py): A is stock Nova, with no
nova_ext anywhere; B has every nova_ext seam attached as an operator
attaches them, with no capability enabled. In each cloud:

* nova-api: ``GET /servers/detail`` and ``GET /servers``, all tenants, as
  admin at the latest microversion, through nova-api's WSGI pipeline;
* notifications: what the emitting thread pays for one versioned
  ``instance.update`` (see emission.py).
"""

import functools
import os

from nova import utils
from oslo_config import cfg

from nova_ext import compat
from nova_ext.tests.functional import fixtures as ext_fixtures

from nova_ext_tools.bench import data
from nova_ext_tools.bench import emission
from nova_ext_tools.bench import measure
from nova_ext_tools.bench import report
from nova_ext_tools.demo import cloud

CONF = cfg.CONF

STOCK, ATTACHED = report.STOCK, report.ATTACHED
CONFIGS = ((STOCK, ()), (ATTACHED, ext_fixtures.ALL_SEAMS))
HEADERS = ('metric', 'stock', 'nova_ext attached', 'ratio (B/A)')

ENDPOINTS = (
    ('detail', '/servers/detail?all_tenants=1&limit=1000'),
    ('index', '/servers?all_tenants=1'),
)
WARMUP_REQUESTS = 2
NOTIFICATION_ROUNDS = 5


def run(args):
    """Measure both configurations, print and save the results.

    :returns: the exit code: 1 if a cloud failed, else 0.
    """
    results = {'benchmark': 'seams', 'environment': _environment(args),
               'configurations': {}}
    load = results['environment']['load_average_1min'] = {}
    for name, seams in CONFIGS:
        measured = results['configurations'][name] = {'seams': list(seams)}
        print('\n== %s: %s ==' % (name, 'nova_ext attached, nothing enabled'
                                  if seams else 'stock Nova, no nova_ext'))
        before = os.getloadavg()[0]
        errors = cloud.run(functools.partial(_measure, args, measured),
                           cells=args.cells, seams=seams)
        load[name] = '%.2f to %.2f' % (before, os.getloadavg()[0])
        if errors:
            for _, error in errors:
                print('\nThe %s cloud failed:\n%s' % (name, error))
            return 1
    stock, attached = (results['configurations'][name] for name, _ in CONFIGS)
    results['environment']['identical_data'] = (
        stock['data']['fingerprint'] == attached['data']['fingerprint']
        and stock['data']['per_cell'] == attached['data']['per_cell'])
    results['metrics'] = _metrics(stock, attached)
    results['notes'] = _notes(stock, attached)
    report.show(results, HEADERS)
    report.write_json(results, args.output)
    print('\nresults written to %s' % args.output)
    return 0


def _measure(args, out, the_cloud):
    progress = the_cloud.progress
    progress.step('creating %d servers: 1 booted, the rest cloned in the '
                  'databases' % args.servers)
    out['data'] = data.populate(the_cloud, args.servers)
    api = the_cloud.admin_api
    api.microversion = 'latest'
    listed = api.api_get(ENDPOINTS[0][1]).body['servers']
    out['data'].update(listed=len(listed),
                       fingerprint=data.fingerprint(listed))

    progress.step('%d x (GET /servers/detail, GET /servers), after %d '
                  'warm-ups' % (args.repeat, WARMUP_REQUESTS))
    samples = measure.time_gets(api, ENDPOINTS, args.repeat,
                                warmup=WARMUP_REQUESTS)
    out['api_ms'] = {name: dict(measure.summary(values, 1000.0),
                                samples=[v * 1000.0 for v in values])
                     for name, values in samples.items()}

    out['attached'] = _attached(the_cloud)
    progress.step('%d rounds of %d versioned notifications, each way'
                  % (NOTIFICATION_ROUNDS, args.notifications))
    out['notifications'] = emission.measure_all(
        the_cloud, out['data']['template'], args.notifications,
        NOTIFICATION_ROUNDS)


def _attached(the_cloud):
    with open(the_cloud.nova_ext.paste_ini) as f:
        pipeline = [line for line in f
                    if line.startswith('keystone =')][0].split('=', 1)[1]
    return {
        'api_pipeline_has_nova_ext': 'nova_ext' in pipeline.split(),
        'notification_drivers': list(CONF.oslo_messaging_notifications.driver),
        'scheduler_attach': ext_fixtures.ATTACH in
        CONF.filter_scheduler.available_filters,
        'notification_dispatcher': emission.dispatcher_loaded(),
    }


def _metrics(stock, attached):
    rows = []
    for name, url in ENDPOINTS:
        for stat in ('median', 'p90', 'min'):
            rows.append(('GET %s, %s' % (url, stat), 'ms',
                         stock['api_ms'][name][stat],
                         attached['api_ms'][name][stat]))
    labels = (('rpc', 'emit via nova.rpc (harness wiring)'),
              ('notifier', 'emit via oslo.messaging Notifier'),
              ('driver', 'nova_ext driver notify() alone'))
    for name, label in labels:
        for stat in ('median', 'min'):
            rows.append(('%s, %s' % (label, stat), 'us',
                         stock['notifications'].get(name, {}).get(stat),
                         attached['notifications'].get(name, {}).get(stat)))
    return [{'metric': label, 'unit': unit, STOCK: a, ATTACHED: b,
             'ratio': b / a if a and b else None}
            for label, unit, a, b in rows]


def _notes(stock, attached):
    configs = (stock, attached)
    api = max(c['api_ms'][name]['p90'] / c['api_ms'][name]['min']
              for c in configs for name, _ in ENDPOINTS)
    emit = max(max(way['rounds_seconds']) / min(way['rounds_seconds'])
               for c in configs for way in c['notifications'].values()
               if isinstance(way, dict))
    return [
        'Noise: within one configuration, request latencies vary by up to '
        '%.0f%% (p90 over min) and notification rounds by up to %.0f%% '
        '(slowest over fastest); ratios that close to 1 show no measurable '
        'difference.' % ((api - 1) * 100, (emit - 1) * 100),
        'In B the harness tees nova.rpc\'s notifier to Nova\'s fake '
        'notifier and to a real one with the messagingv2 and nova_ext '
        'drivers, so the nova.rpc ratio is mostly messagingv2 on the fake '
        'transport. The oslo.messaging Notifier rows (messagingv2 alone vs '
        'messagingv2 and nova_ext) are the production difference, and the '
        'driver alone row is nova_ext\'s own share of it.',
    ]


def _environment(args):
    return {
        'cells': args.cells,
        'computes_per_cell': 1,
        'servers': args.servers,
        'requests_per_endpoint': args.repeat,
        'warmup_requests': WARMUP_REQUESTS,
        'notifications_per_round': args.notifications,
        'notification_rounds': NOTIFICATION_ROUNDS,
        'python': report.python_version(),
        'nova': str(compat.nova_version()),
        'concurrency': ('native threads' if utils.concurrency_mode_threading()
                        else 'eventlet'),
        'cpus': report.cpu_count(),
        'order': [name for name, _ in CONFIGS],
    }
