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
"""``nova-ext-bench cloud``: both nova-apis of the real cloud, side by side.

Against a running ``tox -e cloud``: fill it (cloudfill.py), check that
nova_ext's nova-api answers every query byte for byte as the stock one
does, then, for each number of clients, with and without writes running,
time each query through the stock nova-api, nova_ext's and the floor
(``nova_ext_tools.cloud.floor``: the same pipeline answering the stock
page from memory, or an empty list, after the same Neutron lookup), the
four phases interleaved round by round. How many of nova_ext's answers
nova_ext served itself is read from the indexer's metrics, not assumed.
"""

import json
import os
import sys
import time

from nova_ext_tools.bench import cloudfill
from nova_ext_tools.bench import cloudload
from nova_ext_tools.bench import cloudprofile
from nova_ext_tools.bench import listquery
from nova_ext_tools.bench import report
from nova_ext_tools.cloud import bootstrap
from nova_ext_tools.cloud import build
from nova_ext_tools.cloud import floor
from nova_ext_tools.cloud import layout
from nova_ext_tools.cloud import nova
from nova_ext_tools.cloud import novaext

#: The queries of ``nova-ext-bench list`` measured here.
QUERIES = ('detail admin', 'detail project', 'detail admin by name',
           'index admin')
USERS = {'admin': 'admin', 'project': 'member1'}
STOCK, NOVA_EXT, FLOOR_PAGE, FLOOR_EMPTY = (
    'stock', 'nova_ext', 'floor page', 'floor empty')
APIS = (STOCK, NOVA_EXT, FLOOR_PAGE, FLOOR_EMPTY)
TARGET_RATIO, FLOOR_TARGET = 20.0, 2.0
#: The queries whose nova_ext requests are broken down (--profile).
PROFILED = ('detail admin', 'index admin')
#: The services of the cloud's compute hosts and cells, which no list
#: request asks: their periodic tasks over each compute's 1000 servers
#: (every minute, and the power-state sync every 10 minutes, through the
#: cell's conductor) take the CPU of this one machine from the nova-apis
#: measured.
CELL_SERVICES = ('nova-compute-', 'nova-conductor')
#: Concurrent requests that reach every worker of a nova-api.
WORKERS = layout.API_WORKERS
PUBLISH_SECONDS = novaext.PUBLISH_SECONDS


class Bench(object):

    def __init__(self, args, cloud):
        self.args, self.cloud, self.lay = args, cloud, cloud.lay
        self.conns = {u: bootstrap.connect(self.lay, u)
                      for u in cloudfill.OWNERS}
        self.tokens = {u: c.session.get_token()
                       for u, c in self.conns.items()}
        self.documents = self.lay.path('floor')
        self.sent = 0

    def target(self, api, who, query=None):
        token = self.tokens[USERS[who]]
        if api == STOCK:
            return cloudload.Target(api, self.lay.url('nova_stock', '/v2.1'),
                                    token)
        if api == NOVA_EXT:
            return cloudload.Target(api, self.lay.url('nova', '/v2.1'),
                                    token)
        headers = {floor.DOCUMENT_HEADER: _doc_name(query)}
        if api == FLOOR_EMPTY:
            headers[floor.EMPTY_HEADER] = '1'
        return cloudload.Target(api, self.lay.url('nova_floor', '/v2.1'),
                                token, headers)

    def check(self, query, attempts=10):
        """Nova's answer and nova_ext's, byte for byte; the floor's page."""
        stock = self.target(STOCK, query.who)
        ext = self.target(NOVA_EXT, query.who)
        for _ in range(attempts):
            _, before = stock.get(query.url)
            _, answer = ext.get(query.url)
            self.sent += 1
            _, after = stock.get(query.url)
            if before.content == after.content:
                break
        same = (answer.status_code == before.status_code and
                answer.content in (before.content, after.content))
        floor.write_document(self.documents, _doc_name(query),
                             query.url.startswith('/servers/detail'),
                             before.headers, before.content)
        return {'exact': same, 'servers': len(before.json()['servers']),
                'bytes': len(before.content)}

    def warm(self, query):
        """Untimed: each worker of each nova-api has answered the query.

        A worker's first request costs what no other does (its first
        token validation, its first Neutron client, its first cell
        connections).
        """
        for api in APIS:
            cloudload.phase(self.target(api, query.who, query), query.url,
                            WORKERS, 1 if api == STOCK else 2)
            if api == NOVA_EXT:
                self.sent += WORKERS * 2

    def measure(self, query, clients):
        """The four APIs' phases, interleaved round by round."""
        samples = {api: [] for api in APIS}
        rates = {api: [] for api in APIS}
        errors = {api: [] for api in APIS}
        cells = _cell_services(self.cloud.ps.names())
        busy = {api: [0.0, 0.0] for api in APIS}
        for n in range(self.args.rounds):
            order = APIS if n % 2 == 0 else APIS[::-1]
            for api in order:
                per = per_client(self.args, api, clients)
                used = self.cloud.ps.cpu_seconds(cells)
                got = cloudload.phase(self.target(api, query.who, query),
                                      query.url, clients, per)
                busy[api][0] += _used(used, self.cloud.ps.cpu_seconds(cells))
                busy[api][1] += got['seconds']
                if api == NOVA_EXT:
                    self.sent += clients * per
                samples[api] += got['latencies']
                errors[api] += got['errors']
                rates[api].append(len(got['latencies']) / got['seconds'])
        return {api: dict(_summary(samples[api], rates[api], errors[api]),
                          cells_cores=_cores(*busy[api]))
                for api in APIS}


def per_client(args, api, clients):
    """How many requests each of ``clients`` sends in a phase of ``api``.

    A phase of nova_ext's makes at least ``--tail-requests`` in all, so that
    its p99 is not merely its slowest request: a nearest-rank p99 of fewer
    than 100 samples is their maximum.
    """
    if api == STOCK:
        return args.stock_requests
    if api == NOVA_EXT:
        return max(args.requests, -(-args.tail_requests // clients))
    return args.requests


def _cell_services(names):
    """Those of the cloud's process ``names`` that are its cells'."""
    return [name for name in names if name.startswith(CELL_SERVICES)]


def _used(before, after):
    """CPU seconds used between two ``Processes.cpu_seconds``.

    A service started meanwhile counts from 0; one whose seconds went
    back (restarted, or a member gone) counts nothing.
    """
    return sum(max(0.0, seconds - before.get(name, 0.0))
               for name, seconds in after.items())


def _cores(seconds, wall):
    """``seconds`` of CPU over ``wall`` seconds, in cores, or None."""
    return round(seconds / wall, 2) if wall else None


def _doc_name(query):
    return query.name.replace(' ', '-')


def _summary(latencies, rates, errors):
    ms = [round(x * 1000, 1) for x in latencies]
    return {'p50_ms': cloudload.percentile(ms, 0.5),
            'p99_ms': cloudload.percentile(ms, 0.99),
            'max_ms': max(ms) if ms else None,
            'rps': round(sum(rates) / len(rates), 3) if rates else None,
            'requests': len(ms), 'errors': errors}


def _ratio(a, b):
    return round(a / b, 2) if a and b else None


def run(args):
    state = args.state or os.environ.get('NOVA_EXT_CLOUD_STATE') or '.cloud'
    if not os.path.exists(os.path.join(state, 'cloud.json')):
        print('no cloud in %s: start one with tox -e cloud' % state)
        return 2
    cloud = build.Cloud(state)
    bench = Bench(args, cloud)
    queries = [q for q in listquery.QUERIES if q.name in QUERIES]
    out = {'benchmark': 'cloud', 'environment': {
        'python': report.python_version(), 'cpus': report.cpu_count(),
        'load_before': report.load_average()}}
    with open(cloud.lay.path('resources.json')) as f:
        image = json.load(f)['image']
    print('filling the cloud to %d servers per cell' % args.per_cell,
          flush=True)
    out['fill'] = cloudfill.fill(bench.conns, cloud, args.per_cell,
                                 args.booted, image, progress=lambda m: print(
                                     '  ' + m, flush=True))
    print('filled: %s' % out['fill'], flush=True)
    started_floor = not cloud.ps.running(nova.FLOOR_API)
    try:
        out.update(_measure(args, cloud, bench, queries))
    finally:
        if started_floor:
            cloud.ps.stop(nova.FLOOR_API)
        for conn in bench.conns.values():
            conn.close()
    out['environment']['load_after'] = report.load_average()
    _show(out)
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    with open(args.output, 'w') as f:
        json.dump(out, f, indent=1, sort_keys=True)
    print(json.dumps(out, sort_keys=True))
    exact = all(c['exact'] for c in out['checks'].values())
    return 0 if exact else 1


def _measure(args, cloud, bench, queries):
    time.sleep(PUBLISH_SECONDS)
    before = cloud.ext.list_counters()
    handed = cloud.ext.handed_reasons()
    pages = cloud.ext.page_lookups()
    checks = {q.name: bench.check(q) for q in queries}
    print('answers: %s' % checks, flush=True)
    if not cloud.ps.running(nova.FLOOR_API):
        cloud.nova.start_floor_api(bench.documents)
    # Booted servers only: a clone is unknown to the fake compute, which
    # would fail to stop it.
    pool = [s['id'] for s in bench.conns['admin'].compute.get(
        '/servers?all_tenants=1&status=ACTIVE&name=^bench&limit=%d'
        % args.write_pool, microversion='2.1').json()['servers']]
    writes_targets = [bench.target(api, 'admin')
                      for api in (NOVA_EXT, STOCK)]
    for query in queries:
        bench.warm(query)
    rows = []
    written = {}
    for writes in (False, True):
        writer = cloudload.Writer(writes_targets, pool, args.write_rate)
        for clients in args.clients:
            for query in queries:
                print('%s, %d clients, writes %s ...' % (
                    query.name, clients, 'on' if writes else 'off'),
                    flush=True)
                load = report.load_average()
                started = time.monotonic()
                if writes:
                    with writer:
                        got = bench.measure(query, clients)
                else:
                    got = bench.measure(query, clients)
                rows.append(dict(got, query=query.name, clients=clients,
                                 writes=writes, load=load,
                                 seconds=round(time.monotonic() - started,
                                               1)))
                print('  %s' % _line(rows[-1]), flush=True)
        if writes:
            written = writer.summary()
    served = _served(cloud, before, handed, bench)
    served['pages'] = {k: int(v - pages.get(k, 0))
                       for k, v in cloud.ext.page_lookups().items()}
    profiles = {}
    if args.profile:
        for query in queries:
            if query.name in PROFILED:
                print('profiling %s ...' % query.name, flush=True)
                profiles[query.name] = cloudprofile.profile(
                    cloud, bench.target(NOVA_EXT, query.who), query.url,
                    seconds=args.profile)
    return {'checks': checks, 'rows': rows, 'served': served,
            'profiles': profiles,
            'writes': dict(written, rate=args.write_rate,
                           pool=len(pool))}


def _served(cloud, before, handed, bench):
    """nova_ext's outcomes of the requests sent to it, once published.

    With the reasons of those it handed to Nova.
    """
    for _ in range(4):
        time.sleep(PUBLISH_SECONDS)
        now = cloud.ext.list_counters()
        delta = {k: int(now.get(k, 0) - before.get(k, 0)) for k in now}
        if sum(delta.get(k, 0) for k in novaext.ATTEMPTS) >= bench.sent:
            break
    reasons = cloud.ext.handed_reasons()
    return {'sent': bench.sent, 'outcomes': delta,
            'handed': {k: int(v - handed.get(k, 0))
                       for k, v in reasons.items() if v > handed.get(k, 0)}}


def _line(row):
    s, e = row[STOCK], row[NOVA_EXT]
    return ('stock p50 %s p99 %s rps %s | nova_ext p50 %s p99 %s rps %s | '
            'x%s p50, x%s p99, x%s rps | floor page %s, empty %s | '
            "cells' cores %s" % (
                s['p50_ms'], s['p99_ms'], s['rps'], e['p50_ms'],
                e['p99_ms'], e['rps'], _ratio(s['p50_ms'], e['p50_ms']),
                _ratio(s['p99_ms'], e['p99_ms']), _ratio(e['rps'], s['rps']),
                row[FLOOR_PAGE]['p50_ms'], row[FLOOR_EMPTY]['p50_ms'],
                e.get('cells_cores')))


def _show(out):
    headers = ('query', 'clients', 'writes', 'stock p50/p99 ms',
               'nova_ext p50/p99 ms', 'x p50', 'x p99', 'req/s stock',
               'req/s nova_ext', 'x req/s', 'floor page/empty p50 ms',
               'nova_ext/floor', 'load', "cells' cores")
    rows = []
    for r in out['rows']:
        s, e = r[STOCK], r[NOVA_EXT]
        rows.append((r['query'], r['clients'], 'on' if r['writes'] else 'off',
                     '%s / %s' % (s['p50_ms'], s['p99_ms']),
                     '%s / %s' % (e['p50_ms'], e['p99_ms']),
                     _ratio(s['p50_ms'], e['p50_ms']),
                     _ratio(s['p99_ms'], e['p99_ms']), s['rps'], e['rps'],
                     _ratio(e['rps'], s['rps']),
                     '%s / %s' % (r[FLOOR_PAGE]['p50_ms'],
                                  r[FLOOR_EMPTY]['p50_ms']),
                     _ratio(e['p50_ms'], r[FLOOR_PAGE]['p50_ms']),
                     r['load'][0], e.get('cells_cores')))
    print('\n== nova-ext-bench cloud ==')
    for key, value in out['environment'].items():
        print('%s: %s' % (key.replace('_', ' '), value))
    print('fill: %s' % out['fill'])
    print('answers: %s' % out['checks'])
    print('served: %s' % out['served'])
    print('writes: %s' % out['writes'])
    print()
    report.table(headers, [tuple(str(c) for c in row) for row in rows],
                 sys.stdout)
    for name, got in out.get('profiles', {}).items():
        print('\none nova_ext request, %s, by component (stack sampler): %s'
              % (name, ', '.join('%s=%s' % i for i in got.items()
                                 if i[0] not in ('components', 'slowest'))))
        for part, value in got.get('components', {}).items():
            print('  %-45s %8.1f ms  %5.1f%%' % (
                part, value['ms_per_request'], value['share'] * 100))
        slow = got.get('slowest')
        if slow:
            print('  the slowest %d requests (%s ms and more, %s ms each):'
                  % (slow['requests'], slow['from_ms'],
                     slow['wall_ms_per_request']))
            for part, ms in slow['components'].items():
                print('    %-43s %8.1f ms' % (part, ms))
    print('\ntargets: nova_ext at least %gx stock at p50 and p99, and in '
          'requests/s at 8 clients, with writes; nova_ext p50 within %gx '
          'of the floor page' % (TARGET_RATIO, FLOOR_TARGET))
