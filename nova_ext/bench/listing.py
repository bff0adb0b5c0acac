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
"""``nova-ext-bench list``: GET /servers through the index against stock.

For each number of cells, one cloud is booted (one after the other in this
process, each torn down before the next), given ``--per-cell`` servers in
every cell (cloned in the cell databases, see data.py, shared out between
four projects), and the instance index is synced from the cells. Then, in
that one cloud and on the same data, every query below is made through
nova-api's WSGI pipeline four ways:

* ``index``: nova_ext's instance list driver ``index``, as an operator
  enables it (``[nova_ext_instance_list]driver = index``);
* ``fast``: the same driver with ``fast_render``: nova_ext's handler has
  Nova's view code render the index rows themselves;
* ``cached``: ``fast`` with the render cache
  (``[nova_ext_instance_list]render_cache_size``): documents rendered for
  earlier requests are reused while their index rows are unchanged. Its
  first answer to each query (the one compared) is rendered cold, and
  timed apart as ``cold``;
* ``stock``: Nova's own ``get_instance_objects_sorted`` (the cells path),
  put back for the duration of the request.

Queries: ``GET /servers/detail`` and ``GET /servers``, ``limit=1000``,
default sort and ``sort_key=display_name``, as admin with ``all_tenants=1``
and as a member of a project that owns a quarter of the servers; at the
latest microversion.

Correctness is checked on the way: the first answer of each query through
the index, rendered either way, must have the same status and the same
bytes as Nova's, and every timed index request must have been served by the
index (and, for ``fast``, rendered by nova_ext), not handed back to Nova.
A difference is printed loudly, kept in the results and makes the exit
code 1.

A *bare reference* is timed in each cloud too: fetching the same number of
stored instance rows from the index database and serialising them to JSON.
No design that reads the rows it lists can go below it.

The index paths make their first answers, and are timed, in processes
forked from this one before Nova's path first runs here: one process per
path for the answers, then ``--processes`` per path for the timing, every
timed request paired with a bare sample in the same process. This process
never runs an index path itself. Nova's path is timed afterwards in this
process (``--shared``: everything in this process, interleaved).
listtime.py says why.
"""

import collections
import functools
import gc
import itertools
import resource
import sys
import time

from nova import context as nova_context
from nova import utils
from oslo_config import cfg

from nova_ext.bench import data
from nova_ext.bench import listtime
from nova_ext.bench import plot
from nova_ext.bench import report
from nova_ext import compat
from nova_ext.demo import cloud
from nova_ext.entry_points import api as api_entry_point
from nova_ext.index import sync
from nova_ext.tests.functional import fixtures as ext_fixtures

CONF = cfg.CONF

STOCK, INDEX, FAST, CACHED = 'stock', 'index', 'fast', 'cached'
PATHS = (STOCK, INDEX, FAST, CACHED)
#: The index paths, each compared with STOCK.
INDEXED = (INDEX, FAST, CACHED)
#: Documents the render cache holds in the ``cached`` path.
CACHE_SIZE = 100000
LIMIT = 1000
#: Untimed requests per query and path before the timed ones; the first is
#: the one whose body is compared.
WARMUP_REQUESTS = 2
OPTIONS = {'nova_ext_instance_list': {'driver': 'index',
                                      'fast_render': True}}

#: The clones' owners. The first is the harness's project, the one the
#: non-admin client is a member of; so that member sees a quarter of the
#: servers, spread over every cell.
OTHER_PROJECTS = ('0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b01',
                  '0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b02',
                  '0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b03')

Query = collections.namedtuple('Query', 'name who url')


def _queries():
    queries = []
    for endpoint, who, sort in itertools.product(
            ('detail', 'index'), ('admin', 'project'), ('', 'display_name')):
        path = '/servers/detail' if endpoint == 'detail' else '/servers'
        params = ['limit=%d' % LIMIT]
        if who == 'admin':
            params.insert(0, 'all_tenants=1')
        if sort:
            params.append('sort_key=%s' % sort)
        name = '%s %s%s' % (endpoint, who, ' by name' if sort else '')
        queries.append(Query(name, who, '%s?%s' % (path, '&'.join(params))))
    return tuple(queries)


QUERIES = _queries()
#: The query of the plot and of the targets.
HEADLINE = 'detail admin'

#: The project's targets for the list (see doc/source/admin/benchmarks.rst).
FLATNESS_TARGET = 1.2
SPEEDUP_TARGET, SPEEDUP_CELLS = 10.0, 8
BARE_TARGET = 5.0


def run(args):
    """Measure every number of cells, print and save the results.

    :returns: 1 if a cloud failed or the index and Nova answered a query
        differently, else 0. Timings never fail the benchmark.
    """
    results = {'benchmark': 'list', 'environment': _environment(args),
               'clouds': {}}
    failed = False
    for cells in args.cells:
        out = results['clouds'][cells] = {}
        print('\n== %d cells x %d servers: index and stock, same cloud =='
              % (cells, args.per_cell))
        started = time.monotonic()
        errors = cloud.run(functools.partial(_measure, args, cells, out),
                           cells=cells, seams=(ext_fixtures.API,),
                           options=OPTIONS)
        out['cloud_seconds'] = round(time.monotonic() - started, 1)
        # The cloud is gone; collect it before the next one is built.
        gc.collect()
        out['peak_rss_mib'] = _peak_rss_mib()
        out['rss_after_teardown_mib'] = _rss_mib()
        print('%d cells: %.0f s in all, peak RSS so far %.0f MiB, RSS after '
              'teardown %.0f MiB' % (cells, out['cloud_seconds'],
                                     out['peak_rss_mib'],
                                     out['rss_after_teardown_mib']))
        if errors:
            for _, error in errors:
                print('\n!!! The %d-cell cloud failed:\n%s' % (cells, error))
            out['error'] = '\n'.join(error for _, error in errors)
            failed = True
            # A bigger cloud would fail the same way, or run out of memory.
            break
    measured = [c for c in args.cells
                if 'ms' in results['clouds'].get(c, {})]
    results['environment']['response_validation'] = next(
        (c['response_validation'] for c in results['clouds'].values()
         if 'response_validation' in c), None)
    differences = [(cells, name, diff)
                   for cells in measured
                   for name, diff in sorted(
                       results['clouds'][cells]['differences'].items())]
    results['table'] = _table(results['clouds'], measured)
    results['targets'] = _targets(results['clouds'], measured)
    results['notes'] = _notes(results['clouds'], measured)
    results['identical_answers'] = not differences
    _show(results, measured, differences)
    if measured:
        legend = _plot(results['clouds'], measured, args.plot)
        results['plot'] = {'path': args.plot, 'legend': legend}
        print('\nplot: %s, median ms of %s against cells: %s' % (
            args.plot, HEADLINE, ', '.join(
                '%s %s' % item for item in sorted(legend.items()))))
    report.write_json(results, args.output)
    print('results written to %s' % args.output)
    return 1 if failed or differences else 0


def _measure(args, cells, out, the_cloud):
    progress = the_cloud.progress
    out['response_validation'] = CONF.api.response_validation
    index = the_cloud.useFixture(ext_fixtures.IndexFixture(the_cloud))
    apis = {'admin': the_cloud.admin_api, 'project': the_cloud.api}
    for api in apis.values():
        api.microversion = 'latest'
    projects = (the_cloud.api.project_id,) + OTHER_PROJECTS

    progress.step('creating %d servers (%d per cell) in the cell databases'
                  % (args.per_cell * cells, args.per_cell))
    out['data'] = data.populate(the_cloud, args.per_cell * cells,
                                projects=projects)
    progress.step('syncing the index from the cell databases')
    started = time.monotonic()
    ctx = nova_context.get_admin_context()
    synced = collections.Counter()
    for cell in sync.cells(ctx):
        synced.update(sync.sync_cell(ctx, CONF, cell))
    out['sync'] = dict(synced, seconds=round(time.monotonic() - started, 1))
    progress.done('%d instances' % synced['written'])

    selector = api_entry_point.selector()
    if selector is None:
        raise RuntimeError('the index driver is not attached to nova-api; '
                           'nothing would be measured')

    call = functools.partial(_path_call, apis, selector)
    out['answers'] = {q.name: {'url': q.url} for q in QUERIES}
    if args.shared:
        progress.step('the index answers to %d queries, through %s'
                      % (len(QUERIES), ', '.join(INDEXED)))
        got = {(name, path): answer for path in INDEXED
               for name, answer in listtime.answers(
                   QUERIES, path, call).items()}
    else:
        progress.step('the index answers to %d queries, through %s, in a '
                      'process of its own each'
                      % (len(QUERIES), ', '.join(INDEXED)))
        got = listtime.first_answers(QUERIES, INDEXED, call)
    for (name, path), (_, served, ms) in got.items():
        answer = out['answers'][name]
        answer['%s_first_ms' % path] = round(ms, 1)
        answer['served_' + path] = served
    progress.done()

    gc.collect()
    out['live_objects'] = len(gc.get_objects())
    # Untimed requests before the timed ones: the answers above were one.
    warmup = WARMUP_REQUESTS - 1
    if not args.shared:
        # Before Nova's path has run in this process: see listtime.py.
        progress.step('%d timed rounds of %d queries through %s, each '
                      'paired with the bare reference, in %d processes '
                      'each'
                      % (args.repeat, len(QUERIES), ', '.join(INDEXED),
                         args.processes))
        (out['ms'], out['fallbacks'], out['gc_ms'], bare,
         out['per_process_ms'], out['children']) = listtime.isolated(
            QUERIES, INDEXED, call, index.engine, warmup, args.repeat,
            args.processes, LIMIT)
        out['bare_ms'], out['bare_rows'], out['bare_bytes'] = (
            bare['ms'], bare['rows'], bare['bytes'])
        out['bare_by_path_ms'] = bare['by_path']
        out['bare_per_process_ms'] = bare['per_process']
        progress.done()

    progress.step("Nova's answers to the same queries, compared")
    out['differences'] = {}
    for query in QUERIES:
        want = call(STOCK, query)[0]
        answer = out['answers'][query.name]
        answer.update(status=want.status_code, bytes=len(want.content),
                      servers=len(want.json().get('servers', ()))
                      if want.status_code == 200 else None)
        for path in INDEXED:
            response, served, _ = got.pop((query.name, path))
            difference = _compare(response, served, want=want)
            if difference:
                out['differences']['%s (%s)' % (query.name, path)] = (
                    difference)
                print('\n!!! %d cells, %s (%s), %s: the index and Nova '
                      'answered differently: %s' % (
                          cells, query.name, query.url, path, difference))
    progress.done()

    if args.shared:
        progress.step('%d timed rounds of %d queries, %s in turn, in this '
                      'process' % (args.repeat, len(QUERIES),
                                   ', '.join(PATHS)))
        out['ms'], out['fallbacks'], out['gc_ms'] = listtime.shared(
            QUERIES, PATHS, call, warmup, args.repeat)
        out['bare_ms'], out['bare_rows'], out['bare_bytes'] = (
            listtime.bare(index.engine, WARMUP_REQUESTS, args.repeat,
                          LIMIT))
    else:
        progress.step('%d timed rounds of %d queries through %s, in this '
                      'process' % (args.repeat, len(QUERIES), STOCK))
        ms, _, gc_ms = listtime.shared(QUERIES, (STOCK,), call, warmup,
                                       args.repeat)
        for name in ms:
            out['ms'][name].update(ms[name])
            out['gc_ms'][name].update(gc_ms[name])
    progress.done()
    for name, count in sorted(out['fallbacks'].items()):
        if count:
            print('\n!!! %d cells, %s: %d timed index requests were '
                  'handed back to Nova, so its index timings are partly '
                  'stock timings (see the counters in the results)'
                  % (cells, name, count))
    # In isolated runs, the children's counters stayed in the children.
    out['selector'] = selector.stats.snapshot()


def _request(api, url):
    return api.api_request(url.lstrip('/'), check_response_status=[])


def _stock(fn):
    """Call ``fn`` with Nova's own instance list in place of the index's."""
    with api_entry_point.stock_instance_list():
        return fn()


def _path_call(apis, selector, path, query):
    """``(response, served as asked)`` of ``query`` through ``path``.

    Served as asked: by the index for INDEX, and rendered by nova_ext as
    well for FAST and CACHED; always True for STOCK.
    """
    fn = functools.partial(_request, apis[query.who], query.url)
    if path == STOCK:
        return _stock(fn), True
    counter = 'rendered' if path in (FAST, CACHED) else 'served'
    before = selector.stats.snapshot()[counter]
    CONF.set_override('fast_render', path in (FAST, CACHED),
                      group='nova_ext_instance_list')
    CONF.set_override('render_cache_size',
                      CACHE_SIZE if path == CACHED else 0,
                      group='nova_ext_instance_list')
    try:
        response = fn()
    finally:
        CONF.clear_override('fast_render', group='nova_ext_instance_list')
        CONF.clear_override('render_cache_size',
                            group='nova_ext_instance_list')
    return response, selector.stats.snapshot()[counter] == before + 1


def _compare(got, served, want):
    """What is wrong with the index answer, or None."""
    if not served:
        return 'not served by the index (handed to Nova), nothing compared'
    if got.status_code != want.status_code:
        return 'status %d from the index, %d from Nova: %s' % (
            got.status_code, want.status_code, got.text[:300])
    if want.status_code != 200:
        return 'Nova answered %d: %s' % (want.status_code, want.text[:300])
    if got.content == want.content:
        return None
    try:
        return ext_fixtures.first_difference(want.json(), got.json())
    except ValueError:
        return 'bodies differ (not JSON)'


def _median(clouds, cells, name, path):
    return clouds[cells]['ms'][name][path]['median']


def _table(clouds, measured):
    rows = []
    if not measured:
        return rows
    low = measured[0]
    for query in QUERIES:
        for cells in measured:
            c = clouds[cells]
            ms = c['ms'][query.name]
            row = {'query': query.name, 'url': query.url, 'cells': cells,
                   'servers': c['answers'][query.name]['servers'],
                   'identical': not any(
                       '%s (%s)' % (query.name, path) in c['differences']
                       for path in INDEXED)}
            for path in PATHS:
                row[path + '_median'] = ms[path]['median']
                row[path + '_p90'] = ms[path]['p90']
                row[path + '_over_fewest_cells'] = (
                    ms[path]['median'] /
                    _median(clouds, low, query.name, path))
            row['cached_cold'] = c['answers'][query.name].get(
                'cached_first_ms')
            for path in INDEXED:
                row['stock_over_' + path] = (
                    ms[STOCK]['median'] / ms[path]['median'])
                row[path + '_over_bare'] = (
                    ms[path]['median'] / _bare(c, path))
                row[path + '_fallbacks'] = c['fallbacks'][
                    '%s (%s)' % (query.name, path)]
            rows.append(row)
    return rows


def _targets(clouds, measured):
    """The project's list targets, against the headline query.

    Each target is reported for both index paths; ``fast`` is the one an
    operator enables for speed.
    """
    if not measured:
        return []
    low, high = measured[0], measured[-1]
    targets = []
    for path in (CACHED, FAST, INDEX):
        flat = (_median(clouds, high, HEADLINE, path) /
                _median(clouds, low, HEADLINE, path))
        targets.append({
            'target': '%s@%d within %.1fx of %s@%d (%s)' % (
                path, high, FLATNESS_TARGET, path, low, HEADLINE),
            'measured': flat, 'met': flat <= FLATNESS_TARGET,
            'complete': (low, high) == (2, 32)})
        if SPEEDUP_CELLS in measured:
            speedup = (_median(clouds, SPEEDUP_CELLS, HEADLINE, STOCK) /
                       _median(clouds, SPEEDUP_CELLS, HEADLINE, path))
            targets.append({
                'target': '%s at least %.0fx faster than stock at %d cells '
                          '(%s), stock/%s' % (path, SPEEDUP_TARGET,
                                              SPEEDUP_CELLS, HEADLINE, path),
                'measured': speedup, 'met': speedup >= SPEEDUP_TARGET,
                'complete': True})
        worst = max(_median(clouds, c, HEADLINE, path) /
                    _bare(clouds[c], path) for c in measured)
        targets.append({
            'target': '%s within %.0fx of bare (%s, bare timed in the same '
                      'processes), worst over cells' % (
                          path, BARE_TARGET, HEADLINE),
            'measured': worst, 'met': worst <= BARE_TARGET,
            'complete': True})
    return targets


def _bare(cloud, path):
    """The bare reference ``path`` is judged against, median ms.

    In forked runs, the bare samples taken in ``path``'s own processes
    (see listtime.isolated); in shared runs, the one bare reference.
    """
    if 'bare_by_path_ms' in cloud:
        return cloud['bare_by_path_ms'][path]['median']
    return cloud['bare_ms']['median']


def _notes(clouds, measured):
    notes = []
    for cells in measured:
        c = clouds[cells]
        noise = max(ms[path]['p90'] / ms[path]['min']
                    for ms in c['ms'].values() for path in PATHS)
        notes.append(
            '%d cells: p90 is up to %.0f%% over the fastest sample of the '
            'same query and path; ratios closer to 1 than that show no '
            'measurable difference.' % (cells, (noise - 1) * 100))
        if 'gc_ms' in c:
            # What is left is each request's own garbage (see listtime).
            gc_ms = c['gc_ms'][HEADLINE]
            notes.append(
                '%d cells, %s: median (max) ms in the garbage collector '
                'inside each request: %s; %d live objects in the process.'
                % (cells, HEADLINE, ', '.join(
                    '%s %.1f (%.0f)' % (path, gc_ms[path]['median'],
                                        gc_ms[path]['max'])
                    for path in PATHS), c['live_objects']))
        per_process = c.get('per_process_ms')
        if per_process:
            bare = c['bare_per_process_ms']
            notes.append(
                '%d cells, %s: median ms in each process of its own, with '
                'the bare reference timed in the same process: %s.' % (
                    cells, HEADLINE, '; '.join(
                        '%s %s' % (path, ', '.join(
                            '%.0f (bare %.1f, %.1fx)' % (ms, floor,
                                                         ms / floor)
                            for ms, floor in zip(
                                per_process[path][HEADLINE], bare[path])))
                        for path in INDEXED)))
            children = c['children']
            notes.append(
                '%d cells: the benchmark process used %.0f s of CPU (its '
                'in-process services) while its children ran for %.0f s.'
                % (cells, children['parent_cpu'], children['wall']))
    if len(measured) > 1:
        # The floor moves too (a bigger index, a bigger process): flatness
        # is judged against it as well as against the target.
        low, high = measured[0], measured[-1]
        notes.append(
            'the bare reference itself: bare@%d / bare@%d = %.2f (medians), '
            'against cached@%d / cached@%d = %.2f for %s.' % (
                high, low, clouds[high]['bare_ms']['median'] /
                clouds[low]['bare_ms']['median'], high, low,
                _median(clouds, high, HEADLINE, CACHED) /
                _median(clouds, low, HEADLINE, CACHED), HEADLINE))
        if all('per_process_ms' in clouds[c] for c in (low, high)):
            # How far the ratio moves from one process to another is the
            # measure of how exactly the pooled ratio is known.
            ratios = [h / lo for h in clouds[high]['per_process_ms'][
                CACHED][HEADLINE] for lo in clouds[low]['per_process_ms'][
                    CACHED][HEADLINE]]
            notes.append(
                'cached@%d / cached@%d for %s over every pair of their '
                'processes: %.2f to %.2f.'
                % (high, low, HEADLINE, min(ratios), max(ratios)))
        if all('bare_by_path_ms' in clouds[c] for c in (low, high)):
            # The bare samples share each child's minutes, so this ratio
            # is free of the machine's swings (not of what slows the path
            # alone in one child); it also takes out the floor's own
            # growth, so it is no substitute for the flatness target,
            # only a check on it.
            over = [_median(clouds, c, HEADLINE, CACHED) /
                    _bare(clouds[c], CACHED) for c in (low, high)]
            notes.append(
                'cached/bare for %s, bare from the same processes: %.2f at '
                '%d cells, %.2f at %d; their ratio, flatness net of the '
                'floor and of the machine\'s swings: %.2f.'
                % (HEADLINE, over[0], low, over[1], high,
                   over[1] / over[0]))
    return notes


def _joined(values, fmt='%.0f'):
    return ', '.join(fmt % value for value in values)


def _show(results, measured, differences):
    env = results['environment']
    print('\n== nova-ext-bench list ==')
    for key in ('nova', 'python', 'concurrency', 'cpus', 'response_validation',
                'microversion', 'per_cell', 'repeat', 'warmup_requests',
                'isolation'):
        print('%s: %s' % (key.replace('_', ' '), env[key]))
    print('median (p90) in ms of GET through nova-api, limit=%d; bare: %d '
          'index rows fetched and dumped as JSON' % (LIMIT, LIMIT))
    low = measured[0] if measured else '-'
    headers = ('query', 'cells', 'servers', 'stock', 'index', 'fast',
               'cached', 'cold', 'stock/index', 'stock/fast',
               'stock/cached', 'fast/bare', 'cached/bare',
               'fast/fast@%s' % low, 'cached/cached@%s' % low, 'same body')
    rows = [(r['query'], r['cells'], r['servers'],
             '%.0f (%.0f)' % (r['stock_median'], r['stock_p90']),
             '%.0f (%.0f)' % (r['index_median'], r['index_p90']),
             '%.0f (%.0f)' % (r['fast_median'], r['fast_p90']),
             '%.0f (%.0f)' % (r['cached_median'], r['cached_p90']),
             '%.0f' % r['cached_cold'],
             '%.2f' % r['stock_over_index'],
             '%.2f' % r['stock_over_fast'],
             '%.2f' % r['stock_over_cached'],
             '%.1f' % r['fast_over_bare'],
             '%.1f' % r['cached_over_bare'],
             '%.2f' % r['fast_over_fewest_cells'],
             '%.2f' % r['cached_over_fewest_cells'],
             'yes' if r['identical'] else 'NO')
            for r in results['table']]
    print()
    if rows:
        report.table(headers, rows, sys.stdout)
    for cells in measured:
        c = results['clouds'][cells]
        print('bare reference, %d cells: %.1f ms (p90 %.1f): %d rows, %d '
              'KiB of JSON; the detail admin body is %d KiB' % (
                  cells, c['bare_ms']['median'], c['bare_ms']['p90'],
                  c['bare_rows'], c['bare_bytes'] // 1024,
                  c['answers'][HEADLINE]['bytes'] // 1024))
    print()
    for t in results['targets']:
        print('target: %s: %.2f, %s%s' % (
            t['target'], t['measured'], 'met' if t['met'] else 'NOT met',
            '' if t['complete'] else ' (not measured at 2 and 32 cells)'))
    print()
    for cells, c in sorted(results['clouds'].items()):
        if 'sync' in c:
            print('%d cells: clone %.1f s, index sync %.1f s (%d written), '
                  'cloud %.0f s, peak RSS %.0f MiB, index counters %s' % (
                      cells, c['data']['clone_seconds'], c['sync']['seconds'],
                      c['sync'].get('written', 0), c['cloud_seconds'],
                      c['peak_rss_mib'],
                      {k: v for k, v in c.get('selector', {}).items()
                       if k != 'last_reason' and v}))
    for note in results['notes']:
        print('* %s' % note)
    if differences:
        print('\n!!! THE INDEX AND NOVA ANSWERED DIFFERENTLY:')
        for cells, name, diff in differences:
            print('!!!   %d cells, %s: %s' % (cells, name, diff))
    else:
        print('\nanswers: the index, rendered by Nova and by nova_ext, '
              'gave the same bodies as Nova for every query at every cell '
              'count.')


def _plot(clouds, measured, path):
    """Median latency of the headline query against cells, as a PNG.

    :returns: ``{series: colour}``, the legend of the chart written.
    """
    series = {name: [(c, _median(clouds, c, HEADLINE, name))
                     for c in measured] for name in PATHS}
    series['bare'] = [(c, clouds[c]['bare_ms']['median']) for c in measured]
    return plot.chart(series, path)


def _peak_rss_mib():
    # ru_maxrss is in KiB on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _rss_mib():
    try:
        with open('/proc/self/status') as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def _environment(args):
    return {
        'cells': args.cells,
        'per_cell': args.per_cell,
        'projects': 1 + len(OTHER_PROJECTS),
        'computes_per_cell': 1,
        'repeat': args.repeat,
        'warmup_requests': WARMUP_REQUESTS,
        'isolation': ('shared: every path in the benchmark process'
                      if args.shared else
                      'forked: each index path in %d processes of its '
                      'own, paired request by request with the bare '
                      'reference; stock in the benchmark process'
                      % args.processes),
        'limit': LIMIT,
        'microversion': 'latest',
        'queries': {q.name: q.url for q in QUERIES},
        # Set by the harness, read in the first cloud.
        'response_validation': None,
        'nova': str(compat.nova_version()),
        'python': report.python_version(),
        'concurrency': ('native threads' if utils.concurrency_mode_threading()
                        else 'eventlet'),
        'cpus': report.cpu_count(),
    }
