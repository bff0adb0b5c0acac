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

For each number of cells, one cloud is booted, given ``--per-cell``
servers in every cell (cloned in the cell databases, see data.py, shared out
between
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

Every cloud lives in a process of its own, forked from this one, all of
them at once (clouds.py); each is built there and then asked for each step
in turn, one cloud at a time. The index paths make their first answers,
and are timed, in processes forked from the cloud's before Nova's path first
runs there: one process per path for the answers, then ``--processes`` per
timed path (``--paths``) for the timing, every timed request paired with a
bare sample in the same process. The clouds take turns, child by child,
so that a path is timed at every number of cells within minutes. Nova's
path is timed afterwards, in each cloud's process. listtime.py says why.
While a child makes its timed requests, every cloud's process is stopped
(quiet.py); while Nova's path is timed, every other cloud's
(``--others``).

``--shared``: one cloud after another in this process, every path timed in
it, interleaved (the method of runs before 2026-11).
"""

import functools
import gc
import resource
import sys
import time

from nova import utils

from nova_ext.bench import clouds
from nova_ext.bench import listcloud
from nova_ext.bench import listquery
from nova_ext.bench import listtime
from nova_ext.bench import measure
from nova_ext.bench import plot
from nova_ext.bench import quiet
from nova_ext.bench import report
from nova_ext import compat
from nova_ext.demo import cloud
from nova_ext.tests.functional import fixtures as ext_fixtures


def run(args):
    """Measure every number of cells, print and save the results.

    :returns: 1 if a cloud failed or the index and Nova answered a query
        differently, else 0. Timings never fail the benchmark.
    """
    results = {'benchmark': 'list', 'environment': _environment(args),
               'clouds': {cells: {} for cells in args.cells}}
    if args.shared:
        failed = _one_after_another(args, results['clouds'])
    else:
        failed = _side_by_side(args, results['clouds'])
    measured = [c for c in args.cells if 'ms' in results['clouds'][c]]
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
            args.plot, listquery.HEADLINE, ', '.join(
                '%s %s' % item for item in sorted(legend.items()))))
    report.write_json(results, args.output)
    print('results written to %s' % args.output)
    return 1 if failed or differences else 0


def _build(args, cells, out, body, progress=None):
    """Boot a cloud of ``cells`` cells and call ``body(listcloud.Cloud)``.

    :param out: the cloud's results, filled in this process.
    :returns: the errors (strings) of the cloud, empty on success.
    """
    def measure(the_cloud):
        body(listcloud.prepare(args, cells, out, the_cloud))

    errors = cloud.run(measure, cells=cells, seams=(ext_fixtures.API,),
                       options=listquery.OPTIONS, progress=progress)
    return [error for _, error in errors]


def _side_by_side(args, outs):
    """Every cloud alive at once, each in a process of its own.

    Each cloud is built in its process, the clouds side by side; then
    every step that is timed is taken by one cloud at a time, the clouds
    in turn (clouds.turns), so that the clouds share the minutes they are
    timed in and the machine's drift falls on them alike.

    :returns: True if a cloud failed.
    """
    print('\n== %s cells x %d servers: one cloud each, built side by side, '
          'timed in turns ==' % (','.join(map(str, args.cells)),
                                 args.per_cell))
    started = {}
    procs = {}
    for cells in args.cells:
        started[cells] = time.monotonic()
        procs[cells] = clouds.CloudProcess(
            '%d cells' % cells, functools.partial(
                _serve, args, cells, clouds.LinePrefixed(
                    '[%d cells] ' % cells)))
    live = [cells for cells in args.cells if procs[cells].ready()]
    failed = len(live) < len(args.cells)
    steps = ([(cells, ('answers',)) for cells in live] +
             [(cells, ('time', path)) for cells, path in clouds.turns(
                 live, listcloud.timed_paths(args), args.processes)] +
             [(cells, ('stock',)) for cells in live] +
             [(cells, ('results',)) for cells in live])
    for n, (cells, step) in enumerate(steps, 1):
        if cells not in live:
            continue
        begun = time.monotonic()
        others = [procs[c].pid for c in live if c != cells]
        try:
            reply = _ask(args, procs[cells], step, others, outs[cells])
        except clouds.CloudFailed:
            # Kept in the process's errors, reported below.
            live.remove(cells)
            failed = True
            continue
        print('[%d/%d] %d cells, %s: %.0f s' % (
            n, len(steps), cells, ' '.join(step),
            time.monotonic() - begun))
        if step[0] == 'results':
            outs[cells].update(reply)
    for cells in args.cells:
        errors = procs[cells].stop()
        out = outs[cells]
        out['cloud_seconds'] = round(time.monotonic() - started[cells], 1)
        out.update(procs[cells].info)
        failed = _failed(cells, out, errors) or failed
    return failed


def _ask(args, proc, step, others, out):
    """Have ``proc`` take ``step``, the ``others`` stopped if asked.

    A timed child stops them itself, with its own parent, once its
    untimed requests are made (listtime.child_jobs); while Nova's path is
    timed in the cloud's process, this process stops the other clouds.
    """
    if getattr(args, 'others', 'running') != 'stopped':
        return proc.ask(*step)
    if step[0] == 'time':
        return proc.ask(*(step + (others,)))
    if step[0] != 'stock':
        return proc.ask(*step)
    with quiet.Quiet(others, listtime.CHILD_STALL, watch=proc.pid) as pause:
        reply = proc.ask(*step)
        out['stock_alone'] = pause.stopped
    return reply


def _failed(cells, out, errors):
    """Report a cloud's errors, if any; its timings are not used."""
    for error in errors:
        print('\n!!! The %d-cell cloud failed:\n%s' % (cells, error))
    if errors:
        out['error'] = '\n'.join(errors)
        out.pop('ms', None)
    return bool(errors)


def _serve(args, cells, stream, serve):
    """In a cloud's own process: build it, then do what is asked."""
    def body(measured):
        serve(listcloud.handlers(measured))

    return _build(args, cells, {}, body, cloud.Progress(stream))


def _one_after_another(args, outs):
    """Each cloud in turn in this process, every path timed in it."""
    failed = False
    for cells in args.cells:
        out = outs[cells]
        print('\n== %d cells x %d servers: index and stock, same cloud =='
              % (cells, args.per_cell))
        started = time.monotonic()
        errors = _build(args, cells, out, listcloud.shared)
        out['cloud_seconds'] = round(time.monotonic() - started, 1)
        # The cloud is gone; collect it before the next one is built.
        gc.collect()
        out['peak_rss_mib'] = _peak_rss_mib()
        print('%d cells: %.0f s in all, peak RSS so far %.0f MiB'
              % (cells, out['cloud_seconds'], out['peak_rss_mib']))
        if _failed(cells, out, errors):
            failed = True
            # A bigger cloud would fail the same way, or run out of memory.
            break
    return failed


def _median(clouds, cells, name, path):
    return clouds[cells]['ms'][name][path]['median']


def _headline(clouds, cells, path):
    return _median(clouds, cells, listquery.HEADLINE, path)


def _paths(clouds, measured):
    """The paths timed in every measured cloud, Nova's first.

    Every path, unless ``--paths`` left some index paths untimed.
    """
    return tuple(path for path in listquery.PATHS
                 if all(path in clouds[c]['ms'][listquery.HEADLINE]
                        for c in measured))


def _indexed(paths):
    return [path for path in paths if path in listquery.INDEXED]


def _table(clouds, measured):
    rows = []
    if not measured:
        return rows
    low = measured[0]
    paths = _paths(clouds, measured)
    for query in listquery.QUERIES:
        for cells in measured:
            c = clouds[cells]
            ms = c['ms'][query.name]
            row = {'query': query.name, 'url': query.url, 'cells': cells,
                   'servers': c['answers'][query.name]['servers'],
                   'identical': not any(
                       '%s (%s)' % (query.name, path) in c['differences']
                       for path in listquery.INDEXED)}
            for path in paths:
                row[path + '_median'] = ms[path]['median']
                row[path + '_p90'] = ms[path]['p90']
                row[path + '_over_fewest_cells'] = (
                    ms[path]['median'] /
                    _median(clouds, low, query.name, path))
            row['cached_cold'] = c['answers'][query.name].get(
                'cached_first_ms')
            for path in _indexed(paths):
                row['stock_over_' + path] = (
                    ms[listquery.STOCK]['median'] / ms[path]['median'])
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
    paths = _paths(clouds, measured)
    for path in (listquery.CACHED, listquery.FAST, listquery.INDEX):
        if path not in paths:
            continue
        flat = (_headline(clouds, high, path) /
                _headline(clouds, low, path))
        targets.append({
            'target': '%s@%d within %.1fx of %s@%d (%s)' % (
                path, high, listquery.FLATNESS_TARGET, path, low,
                listquery.HEADLINE),
            'measured': flat, 'met': flat <= listquery.FLATNESS_TARGET,
            'complete': (low, high) == (2, 32)})
        if listquery.SPEEDUP_CELLS in measured:
            speedup = (
                _headline(clouds, listquery.SPEEDUP_CELLS, listquery.STOCK) /
                _headline(clouds, listquery.SPEEDUP_CELLS, path))
            targets.append({
                'target': '%s at least %.0fx faster than stock at %d cells '
                          '(%s), stock/%s' % (
                              path, listquery.SPEEDUP_TARGET,
                              listquery.SPEEDUP_CELLS, listquery.HEADLINE,
                              path),
                'measured': speedup,
                'met': speedup >= listquery.SPEEDUP_TARGET,
                'complete': True})
        worst = max(_headline(clouds, c, path) /
                    _bare(clouds[c], path) for c in measured)
        targets.append({
            'target': '%s within %.0fx of bare (%s, bare timed in the same '
                      'processes), worst over cells' % (
                          path, listquery.BARE_TARGET, listquery.HEADLINE),
            'measured': worst, 'met': worst <= listquery.BARE_TARGET,
            'complete': True})
    return targets


def _bare(cloud, path):
    """The bare reference ``path`` is judged against, median ms.

    In forked runs, the bare samples taken in ``path``'s own processes
    (see listtime.child_jobs); in shared runs, the one bare reference.
    """
    if 'bare_by_path_ms' in cloud:
        return cloud['bare_by_path_ms'][path]['median']
    return cloud['bare_ms']['median']


def _notes(clouds, measured):
    notes = []
    paths = _paths(clouds, measured)
    for cells in measured:
        c = clouds[cells]
        noise = max(ms[path]['p90'] / ms[path]['min']
                    for ms in c['ms'].values() for path in paths)
        notes.append(
            '%d cells: p90 is up to %.0f%% over the fastest sample of the '
            'same query and path; ratios closer to 1 than that show no '
            'measurable difference.' % (cells, (noise - 1) * 100))
        if 'gc_ms' in c:
            # What is left is each request's own garbage (see listtime).
            gc_ms = c['gc_ms'][listquery.HEADLINE]
            notes.append(
                '%d cells, %s: median (max) ms in the garbage collector '
                'inside each request: %s; %d live objects in the process.'
                % (cells, listquery.HEADLINE, ', '.join(
                    '%s %.1f (%.0f)' % (path, gc_ms[path]['median'],
                                        gc_ms[path]['max'])
                    for path in paths), c['live_objects']))
        per_process = c.get('per_process_ms')
        if per_process:
            bare = c['bare_per_process_ms']
            notes.append(
                '%d cells, %s: median ms in each process of its own, with '
                'the bare reference timed in the same process: %s.' % (
                    cells, listquery.HEADLINE, '; '.join(
                        '%s %s' % (path, ', '.join(
                            '%.0f (bare %.1f, %.1fx)' % (ms, floor,
                                                         ms / floor)
                            for ms, floor in zip(
                                per_process[path][listquery.HEADLINE],
                                bare[path])))
                        for path in _indexed(paths))))
            checks = c.get('cell_checks')
            if checks:
                notes.append(
                    '%d cells: the index\'s cell check, every '
                    'cell_check_interval of %s, fell on %s.' % (
                        cells, 'request time' if c.get('check_clock') ==
                        'requests' else 'wall time', '; '.join(
                            '%d of %d %s requests' % (
                                checks[path]['checks'],
                                checks[path]['requests'], path)
                            for path in _indexed(paths)
                            if path in checks)))
            alone = c.get('alone')
            if alone:
                notes.append(
                    '%d cells: children that ran their timed requests with '
                    'every cloud process stopped: %s; Nova\'s path timed '
                    'with the other clouds %s.' % (
                        cells, '; '.join(
                            '%d of %d %s' % (alone[path][0], alone[path][1],
                                             path)
                            for path in _indexed(paths) if path in alone),
                        'stopped' if c.get('stock_alone') else 'running'))
            children = c['children']
            notes.append(
                '%d cells: the benchmark process used %.0f s of CPU (its '
                'in-process services) while its children ran for %.0f s%s.'
                % (cells, children['parent_cpu'], children['wall'],
                   '; it waited %.0f s in all for its threads to settle '
                   'before forking them' % children['settle']
                   if 'settle' in children else '') +
                ('' if 'computes_up' not in children else
                 ' Before Nova\'s answers, it waited %.0f s for every '
                 'compute\'s heartbeat to show it up again.'
                 % children['computes_up']))
    if len(measured) > 1 and listquery.CACHED in paths:
        # The floor moves too (a bigger index, a bigger process): flatness
        # is judged against it as well as against the target.
        low, high = measured[0], measured[-1]
        notes.append(
            'the bare reference itself: bare@%d / bare@%d = %.2f (medians), '
            'against cached@%d / cached@%d = %.2f for %s.' % (
                high, low, clouds[high]['bare_ms']['median'] /
                clouds[low]['bare_ms']['median'], high, low,
                _headline(clouds, high, listquery.CACHED) /
                _headline(clouds, low, listquery.CACHED),
                listquery.HEADLINE))
        if all('per_process_ms' in clouds[c] for c in (low, high)):
            # How far the ratio moves from one process to another is the
            # measure of how exactly the pooled ratio is known.
            highs, lows = (clouds[c]['per_process_ms'][listquery.CACHED][
                listquery.HEADLINE] for c in (high, low))
            ratios = [h / lo for h in highs for lo in lows]
            # The children of one turn were timed one after the other
            # (clouds.turns), so each turn's ratio shares the machine's
            # drift of those minutes.
            turns = [h / lo for h, lo in zip(highs, lows)]
            notes.append(
                'cached@%d / cached@%d for %s over every pair of their '
                'processes: %.2f to %.2f; turn by turn, the two children '
                'timed minutes apart: %s (median %.2f).'
                % (high, low, listquery.HEADLINE, min(ratios), max(ratios),
                   _joined(turns, '%.2f'),
                   measure.summary(turns)['median']))
        if all('bare_by_path_ms' in clouds[c] for c in (low, high)):
            # The bare samples share each child's minutes, so this ratio
            # is free of the machine's swings (not of what slows the path
            # alone in one child); it also takes out the floor's own
            # growth, so it is no substitute for the flatness target,
            # only a check on it.
            over = [_headline(clouds, c, listquery.CACHED) /
                    _bare(clouds[c], listquery.CACHED) for c in (low, high)]
            notes.append(
                'cached/bare for %s, bare from the same processes: %.2f at '
                '%d cells, %.2f at %d; their ratio, flatness net of the '
                'floor and of the machine\'s swings: %.2f.'
                % (listquery.HEADLINE, over[0], low, over[1], high,
                   over[1] / over[0]))
    return notes


def _joined(values, fmt='%.0f'):
    return ', '.join(fmt % value for value in values)


def _show(results, measured, differences):
    env = results['environment']
    print('\n== nova-ext-bench list ==')
    for key in ('nova', 'python', 'concurrency', 'cpus', 'response_validation',
                'microversion', 'per_cell', 'repeat', 'warmup_requests',
                'isolation', 'paths', 'check_clock', 'others'):
        print('%s: %s' % (key.replace('_', ' '), env.get(key)))
    print('median (p90) in ms of GET through nova-api, limit=%d; bare: %d '
          'index rows fetched and dumped as JSON' % (listquery.LIMIT,
                                                     listquery.LIMIT))
    low = measured[0] if measured else '-'
    headers = ('query', 'cells', 'servers', 'stock', 'index', 'fast',
               'cached', 'cold', 'stock/index', 'stock/fast',
               'stock/cached', 'fast/bare', 'cached/bare',
               'fast/fast@%s' % low, 'cached/cached@%s' % low, 'same body')
    rows = [_row(r) for r in results['table']]
    print()
    if rows:
        report.table(headers, rows, sys.stdout)
    for cells in measured:
        c = results['clouds'][cells]
        print('bare reference, %d cells: %.1f ms (p90 %.1f): %d rows, %d '
              'KiB of JSON; the detail admin body is %d KiB' % (
                  cells, c['bare_ms']['median'], c['bare_ms']['p90'],
                  c['bare_rows'], c['bare_bytes'] // 1024,
                  c['answers'][listquery.HEADLINE]['bytes'] // 1024))
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


def _row(r):
    """A table row as printed; '-' for a path left untimed (--paths)."""
    def value(fmt, *keys):
        return fmt % tuple(r[k] for k in keys) if keys[0] in r else '-'

    return ((r['query'], r['cells'], r['servers']) +
            tuple(value('%.0f (%.0f)', path + '_median', path + '_p90')
                  for path in listquery.PATHS) +
            (value('%.0f', 'cached_cold'),) +
            tuple(value('%.2f', 'stock_over_' + path)
                  for path in listquery.INDEXED) +
            (value('%.1f', 'fast_over_bare'),
             value('%.1f', 'cached_over_bare'),
             value('%.2f', 'fast_over_fewest_cells'),
             value('%.2f', 'cached_over_fewest_cells'),
             'yes' if r['identical'] else 'NO'))


def _plot(clouds, measured, path):
    """Median latency of the headline query against cells, as a PNG.

    :returns: ``{series: colour}``, the legend of the chart written.
    """
    series = {name: [(c, _headline(clouds, c, name))
                     for c in measured] for name in _paths(clouds, measured)}
    series['bare'] = [(c, clouds[c]['bare_ms']['median']) for c in measured]
    return plot.chart(series, path)


def _peak_rss_mib():
    # ru_maxrss is in KiB on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _environment(args):
    return {
        'cells': args.cells,
        'per_cell': args.per_cell,
        'projects': 1 + len(listquery.OTHER_PROJECTS),
        'computes_per_cell': 1,
        'repeat': args.repeat,
        'warmup_requests': listquery.WARMUP_REQUESTS,
        'isolation': ('shared: every path in the benchmark process'
                      if args.shared else
                      'side by side: every cloud in a process of its '
                      'own, all alive at once; each index path in %d '
                      'processes forked from each cloud\'s, paired '
                      'request by request with the bare reference, the '
                      'clouds taking turns child by child; stock in each '
                      'cloud\'s process' % args.processes),
        'paths': (None if args.shared else
                  list(listcloud.timed_paths(args))),
        'others': (None if args.shared else
                   getattr(args, 'others', 'running')),
        'check_clock': (None if args.shared else args.check_clock),
        'limit': listquery.LIMIT,
        'microversion': 'latest',
        'queries': {q.name: q.url for q in listquery.QUERIES},
        # Set by the harness, read in the first cloud.
        'response_validation': None,
        'nova': str(compat.nova_version()),
        'python': report.python_version(),
        'concurrency': ('native threads' if utils.concurrency_mode_threading()
                        else 'eventlet'),
        'cpus': report.cpu_count(),
    }
