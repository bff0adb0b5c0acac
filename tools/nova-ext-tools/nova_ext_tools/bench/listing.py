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
between four projects), and the instance index is synced from the cells.
Then, in that one cloud and on the same data, every query below is made
through nova-api's WSGI pipeline five ways:

* ``index``: nova_ext's instance list driver ``index``, as an operator
  enables it (``[nova_ext_instance_list]driver = index``);
* ``fast``: the same driver with ``fast_render``: nova_ext's handler has
  Nova's view code render the index rows themselves;
* ``cached``: ``fast`` with the render cache
  (``[nova_ext_instance_list]render_cache_size``): documents rendered for
  earlier requests are reused while their index rows are unchanged. Its
  first answer to each query (the one compared) is rendered cold, and
  timed apart as ``cold``;
* ``churn``: ``cached`` with a tenth of the page changed in the cells, and
  marked by change capture, before each request, which then catches up
  (listchurn.py); its first answers are compared with Nova's made beside
  them, in the same state;
* ``stock``: Nova's own ``get_instance_objects_sorted`` (the cells path),
  put back for the duration of the request.

Queries: ``GET /servers/detail`` and ``GET /servers``, ``limit=1000``,
default sort and ``sort_key=display_name``, as admin with ``all_tenants=1``
and as a member of a project that owns a quarter of the servers; at the
latest microversion.

Correctness is checked on the way: the first answer of each query through
the index, by every index path, must have the same status and the same
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
(quiet.py); while Nova's path is timed, every other cloud's.
"""

import functools
import time

from nova import utils

from nova_ext import compat
from nova_ext.tests.functional import fixtures as ext_fixtures

from nova_ext_tools.bench import clouds
from nova_ext_tools.bench import listcloud
from nova_ext_tools.bench import listquery
from nova_ext_tools.bench import listreport
from nova_ext_tools.bench import listtime
from nova_ext_tools.bench import quiet
from nova_ext_tools.bench import report
from nova_ext_tools.demo import cloud


def run(args):
    """Measure every number of cells, print and save the results.

    :returns: 1 if a cloud failed or the index and Nova answered a query
        differently, else 0. Timings never fail the benchmark.
    """
    results = {'benchmark': 'list', 'environment': _environment(args),
               'clouds': {cells: {} for cells in args.cells}}
    failed = _side_by_side(args, results['clouds'])
    measured = [c for c in args.cells if 'ms' in results['clouds'][c]]
    results['environment']['response_validation'] = next(
        (c['response_validation'] for c in results['clouds'].values()
         if 'response_validation' in c), None)
    differences = [(cells, name, diff)
                   for cells in measured
                   for name, diff in sorted(
                       results['clouds'][cells]['differences'].items())]
    results['table'] = listreport.make_table(results['clouds'], measured)
    results['targets'] = listreport.make_targets(results['clouds'], measured)
    results['notes'] = listreport.make_notes(results['clouds'], measured)
    results['identical_answers'] = not differences
    listreport.show(results, measured, differences)
    if measured:
        legend = listreport.draw(results['clouds'], measured, args.plot)
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
            reply = _ask(procs[cells], step, others, outs[cells])
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


def _ask(proc, step, others, out):
    """Have ``proc`` take ``step``, the ``others`` stopped while it is timed.

    A timed child stops them itself, with its own parent, once its
    untimed requests are made (listtime.child_jobs); while Nova's path is
    timed in the cloud's process, this process stops the other clouds.
    """
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


def _environment(args):
    return {
        'cells': args.cells,
        'per_cell': args.per_cell,
        'projects': 1 + len(listquery.OTHER_PROJECTS),
        'computes_per_cell': 1,
        'repeat': args.repeat,
        'warmup_requests': listquery.WARMUP_REQUESTS,
        'isolation': ('side by side: every cloud in a process of its '
                      'own, all alive at once; each index path in %d '
                      'processes forked from each cloud\'s, paired '
                      'request by request with the bare reference, the '
                      'clouds taking turns child by child, every cloud '
                      'process stopped while a child times its requests; '
                      'stock in each cloud\'s process, the other clouds '
                      'stopped' % args.processes),
        'paths': list(listcloud.timed_paths(args)),
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
