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
"""What ``nova-ext-bench list`` reports: table, targets, notes and plot.

Made from every cloud's results (listcloud.py) once they are all in.
"""

import sys

from nova_ext_tools.bench import listquery
from nova_ext_tools.bench import measure
from nova_ext_tools.bench import plot
from nova_ext_tools.bench import report


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


def make_table(clouds, measured):
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


def make_targets(clouds, measured):
    """The project's list targets, against the headline query.

    Each target is reported for every index path timed; ``cached`` is
    the one an operator enables for speed. ``churn`` is ``cached`` after
    Nova's writes: only its speed-up over Nova's path is a target.
    """
    if not measured:
        return []
    low, high = measured[0], measured[-1]
    targets = []
    paths = _paths(clouds, measured)
    for path in (listquery.CACHED, listquery.CHURN, listquery.FAST,
                 listquery.INDEX):
        if path not in paths:
            continue
        churn = path == listquery.CHURN
        flat = (_headline(clouds, high, path) /
                _headline(clouds, low, path))
        if not churn:
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
        if churn:
            continue
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

    The bare samples taken in ``path``'s own processes (see
    listtime.child_jobs), or the pooled bare reference without them.
    """
    if 'bare_by_path_ms' in cloud:
        return cloud['bare_by_path_ms'][path]['median']
    return cloud['bare_ms']['median']


def make_notes(clouds, measured):
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
                    '%d cells: the index\'s cell checks (a trivial '
                    'query of every cell): %s.' % (
                        cells, '; '.join(
                            '%d in %d %s requests' % (
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
    notes.extend(_churn_notes(clouds, measured, paths))
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


def _churn_notes(clouds, measured, paths):
    """The churn path beside ``cached`` and Nova's, and what it changed."""
    if listquery.CHURN not in paths:
        return []
    notes = []
    for cells in measured:
        c = clouds[cells]
        ms = {path: _headline(clouds, cells, path) for path in paths}
        text = ('%d cells, %s: churn %.0f ms, stock %.0f ms, stock/churn '
                '%.1f' % (cells, listquery.HEADLINE, ms[listquery.CHURN],
                          ms[listquery.STOCK], ms[listquery.STOCK] /
                          ms[listquery.CHURN]))
        if listquery.CACHED in ms:
            text += ('; cached %.0f ms, stock/cached %.1f, churn/cached '
                     '%.2f' % (ms[listquery.CACHED],
                               ms[listquery.STOCK] / ms[listquery.CACHED],
                               ms[listquery.CHURN] / ms[listquery.CACHED]))
        changes = c.get('churn')
        if changes:
            text += (
                '. Before each churn request, %d servers of its page were '
                'renamed in their cells and marked by capture, outside the '
                'timing (median per child: %s ms); each child put back %s '
                'servers' % (
                    changes['servers_per_request'],
                    _joined(changes['change_ms_median']),
                    ', '.join('+'.join(str(n) for n in restored)
                              for restored in changes['restored'])))
        repaired = c.get('children', {}).get('churn_repaired')
        if repaired:
            text += ('; %d more were restored after a churn child that '
                     'did not finish' % repaired)
        notes.append(text + '.')
    return notes


def _joined(values, fmt='%.0f'):
    return ', '.join(fmt % value for value in values)


def show(results, measured, differences):
    env = results['environment']
    print('\n== nova-ext-bench list ==')
    for key in ('nova', 'python', 'concurrency', 'cpus', 'response_validation',
                'microversion', 'per_cell', 'repeat', 'warmup_requests',
                'isolation', 'paths'):
        print('%s: %s' % (key.replace('_', ' '), env.get(key)))
    print('median (p90) in ms of GET through nova-api, limit=%d; bare: %d '
          'index rows fetched and dumped as JSON' % (listquery.LIMIT,
                                                     listquery.LIMIT))
    low = measured[0] if measured else '-'
    headers = (('query', 'cells', 'servers') + listquery.PATHS +
               ('cold',) + tuple('stock/' + path
                                 for path in listquery.INDEXED) +
               ('fast/bare', 'cached/bare', 'fast/fast@%s' % low,
                'cached/cached@%s' % low, 'same body'))
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
                       if k not in ('last_reason', 'reasons') and v}))
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


def draw(clouds, measured, path):
    """Median latency of the headline query against cells, as a PNG.

    :returns: ``{series: colour}``, the legend of the chart written.
    """
    series = {name: [(c, _headline(clouds, c, name))
                     for c in measured] for name in _paths(clouds, measured)}
    series['bare'] = [(c, clouds[c]['bare_ms']['median']) for c in measured]
    return plot.chart(series, path)
