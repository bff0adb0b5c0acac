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

Besides the two modes' times, the time spent in nova_ext's own code is
summed by part (:class:`Spent`): the capture listeners on Nova's writing
threads, the batcher's commits, the index worker's re-reads; each as
elapsed time and as the CPU time of the thread that ran it. The harness
runs every service in one process, so that work is taken from Nova's
requests: the listeners' elapsed time on the writing thread itself, the
background threads' CPU time through the interpreter lock. Unlike the two
modes' difference, these sums do not move with the machine's drift.
"""

import functools
import os
import threading
import time

import fixtures
from nova import utils

from nova_ext import compat
from nova_ext import conf as ext_conf
from nova_ext.index.apply import refresh
from nova_ext.index.marks import pending
from nova_ext.index.marks import process
from nova_ext.seams import db_writes
from nova_ext.tests.functional import fixtures as ext_fixtures

from nova_ext_tools.bench import measure
from nova_ext_tools.bench import report
from nova_ext_tools.demo import cloud

STOCK, CAPTURE = report.STOCK, report.ATTACHED
HEADERS = ('metric', 'capture off', 'capture on', 'ratio (on/off)')
OPTIONS = {
    'nova_ext_index': {'capture': True},
    # Room for every batch on the fake computes, and in the quota.
    None: {'cpu_allocation_ratio': 64, 'ram_allocation_ratio': 64,
           'disk_allocation_ratio': 64},
    'quota': {'instances': -1, 'cores': -1, 'ram': -1},
}
#: The parts of nova_ext's own work, and the clock that says what each
#: costs Nova's requests.
PARTS = (('hooks', "capture listeners, on Nova's writes", 'elapsed'),
         ('batcher', "batcher's commits of releases", 'cpu'),
         ('worker', "index worker's re-reads", 'cpu'))
CLOCKS = (('elapsed', time.perf_counter), ('cpu', time.thread_time))


class Spent(object):
    """Seconds spent in nova_ext's capture, batcher and worker code.

    Installed by wrapping the module attributes they are reached through;
    :meth:`take` returns what was spent since the last call.
    """

    def __init__(self, test):
        # Listeners are removed by identity: those attached at rpc.init go
        # before their wrappers come.
        db_writes.detach()
        self.seconds = self._zero()
        test.useFixture(fixtures.MonkeyPatch(
            'nova_ext.seams.db_writes._LISTENERS',
            tuple((event, self._timed('hooks', listener))
                  for event, listener in db_writes._LISTENERS)))
        batcher_mark = self._timed('batcher', pending.mark)
        own_mark = pending.mark

        def mark(*args, **kwargs):
            # The holds' marks are timed with the listeners that make them.
            if threading.current_thread().name == 'nova-ext-index-batcher':
                return batcher_mark(*args, **kwargs)
            return own_mark(*args, **kwargs)
        test.useFixture(fixtures.MonkeyPatch(
            'nova_ext.index.marks.pending.mark', mark))
        test.useFixture(fixtures.MonkeyPatch(
            'nova_ext.index.apply.refresh.process_pending',
            self._timed('worker', refresh.process_pending)))

    @staticmethod
    def _zero():
        return {(part, clock): 0.0 for part, _, _ in PARTS
                for clock, _ in CLOCKS}

    def _timed(self, part, call):
        def timed(*args, **kwargs):
            started = [read() for _, read in CLOCKS]
            try:
                return call(*args, **kwargs)
            finally:
                for (clock, read), start in zip(CLOCKS, started):
                    self.seconds[part, clock] += read() - start
        return timed

    def take(self):
        spent, self.seconds = self.seconds, self._zero()
        return spent


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
    spent = Spent(the_cloud)
    parts = {STOCK: spent.take(), CAPTURE: spent.take()}
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
            spent.take()
            _batch(the_cloud, api, hosts, args.servers, samples[mode])
            for key, seconds in spent.take().items():
                parts[mode][key] += seconds
    db_writes.detach()
    the_cloud.progress.done()
    # That capture was at work: the releases its batcher committed.
    results['environment']['capture_releases_recorded'] = (
        process.get_batcher(ext_conf.CONF).marked)
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
    _own_work(results, samples, parts, args)


def _own_work(results, samples, parts, args):
    """Rows and a note: nova_ext's own time, per server booted and deleted.

    The share is of what a server's boot and delete took with capture on,
    each part counted on its clock (PARTS).
    """
    servers = args.servers * args.turns
    for part, label, _ in PARTS:
        for clock, _ in CLOCKS:
            results['metrics'].append({
                'metric': '%s, %s, per server' % (label, clock), 'unit': 'ms',
                STOCK: parts[STOCK][part, clock] / servers * 1000.0,
                CAPTURE: parts[CAPTURE][part, clock] / servers * 1000.0,
                'ratio': None})
    written = sum(samples[CAPTURE]['boot']) + sum(samples[CAPTURE]['delete'])
    added = {part: (parts[CAPTURE][part, clock] - parts[STOCK][part, clock])
             / written for part, _, clock in PARTS}
    results['own_work_share'] = added
    results['notes'] = [
        "What capture adds of nova_ext's own work (capture on minus off: "
        "the listeners' elapsed time, the batcher's and the worker's CPU "
        'time) is %.2f%% of the time servers took to boot and delete with '
        'capture on: listeners %.2f%%, batcher %.2f%%, worker %.2f%%.'
        % ((100.0 * sum(added.values()),) + tuple(
            100.0 * added[part] for part, _, _ in PARTS))]


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
