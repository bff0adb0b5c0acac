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
"""``nova-ext-bench writes``: what change capture adds to Nova's writes.

One cloud: Nova with nova_ext's notification driver and an instance index
(SQLite). Servers are booted and then deleted through the API, in turns:
in each turn one batch with capture detached (Nova's own write path) and
one with it attached (``[nova_ext_index]capture``), the order alternating
from turn to turn, so that both see the same cloud, the same data and the
same drift of the machine. RPC casts are calls in the harness, so a
``POST /servers`` returns once the server is built and a ``DELETE`` once
it is gone: each request's time is the whole write path of that server,
API, conductors, scheduler, compute and their database writes.
"""

import functools
import os
import time

from nova import utils

from nova_ext.bench import measure
from nova_ext.bench import report
from nova_ext import compat
from nova_ext import conf as ext_conf
from nova_ext.demo import cloud
from nova_ext.entry_points import db_writes
from nova_ext.index import consumer
from nova_ext.tests.functional import fixtures as ext_fixtures

STOCK, CAPTURE = report.STOCK, report.ATTACHED
HEADERS = ('metric', 'capture off', 'capture on', 'ratio (on/off)')
OPTIONS = {
    'nova_ext_index': {'capture': True},
    # Room for every batch on the fake computes, and in the quota.
    None: {'cpu_allocation_ratio': 64, 'ram_allocation_ratio': 64,
           'disk_allocation_ratio': 64},
    'quota': {'instances': -1, 'cores': -1, 'ram': -1},
}


def run(args):
    """Boot the cloud, measure in turns, print and save the results."""
    results = {'benchmark': 'writes', 'environment': _environment(args)}
    errors = cloud.run(functools.partial(_measure, args, results),
                       cells=args.cells, options=OPTIONS,
                       seams=(ext_fixtures.NOTIFICATIONS,))
    if errors:
        for _, error in errors:
            print('\nThe cloud failed:\n%s' % error)
        return 1
    report.show(results, HEADERS)
    report.write_json(results, args.output)
    print('\nresults written to %s' % args.output)
    return 0


def _measure(args, results, the_cloud):
    the_cloud.useFixture(ext_fixtures.IndexFixture(the_cloud))
    api = the_cloud.admin_api
    api.microversion = 'latest'
    hosts = ['compute%d-1' % (n + 1) for n in range(args.cells)]
    samples = {STOCK: {'boot': [], 'delete': []},
               CAPTURE: {'boot': [], 'delete': []}}
    for turn in range(args.turns):
        order = (STOCK, CAPTURE) if turn % 2 == 0 else (CAPTURE, STOCK)
        for mode in order:
            the_cloud.progress.step('turn %d/%d, capture %s: boot and delete '
                                    '%d servers' % (turn + 1, args.turns,
                                                    'on' if mode == CAPTURE
                                                    else 'off', args.servers))
            if mode == CAPTURE:
                db_writes.attach(ext_conf.CONF)
            else:
                db_writes.detach()
            _batch(the_cloud, api, hosts, args.servers, samples[mode])
    db_writes.detach()
    the_cloud.progress.done()
    # That capture was at work: the releases its marker committed.
    results['environment']['capture_releases_recorded'] = (
        consumer.get_marker(ext_conf.CONF).marked)
    results['metrics'] = [
        {'metric': '%s, per server, %s' % (what, stat), 'unit': 'ms',
         STOCK: measure.summary(samples[STOCK][what], 1000.0)[stat],
         CAPTURE: measure.summary(samples[CAPTURE][what], 1000.0)[stat]}
        for what in ('boot', 'delete') for stat in ('median', 'p90')]
    for what in ('boot', 'delete'):
        results['metrics'].append({
            'metric': '%s, total of every turn' % what, 'unit': 's',
            STOCK: sum(samples[STOCK][what]),
            CAPTURE: sum(samples[CAPTURE][what])})
    for row in results['metrics']:
        row['ratio'] = (row[CAPTURE] / row[STOCK] if row[STOCK] else None)


def _batch(the_cloud, api, hosts, count, out):
    ids = []
    for n in range(count):
        body = the_cloud._build_server(
            name='w-%d' % n, flavor_id='1', networks='none',
            host=hosts[n % len(hosts)])
        started = time.perf_counter()
        server = api.post_server({'server': body})
        out['boot'].append(time.perf_counter() - started)
        ids.append(server['id'])
    for server_id in ids:
        the_cloud._wait_for_state_change({'id': server_id}, 'ACTIVE')
    for server_id in ids:
        started = time.perf_counter()
        api.delete_server(server_id)
        out['delete'].append(time.perf_counter() - started)
    for server_id in ids:
        the_cloud._wait_until_deleted({'id': server_id})


def _environment(args):
    return {
        'cells': args.cells,
        'servers_per_batch': args.servers,
        'turns': args.turns,
        'python': report.python_version(),
        'nova': str(compat.nova_version()),
        'concurrency': ('native threads' if utils.concurrency_mode_threading()
                        else 'eventlet'),
        'cpus': report.cpu_count(),
        'load_average_1min': os.getloadavg()[0],
    }
