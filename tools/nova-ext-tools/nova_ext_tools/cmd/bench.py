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
"""nova-ext-bench: measure nova_ext against stock Nova, side by side.

Each benchmark boots embedded multi-cell Nova clouds in this process (as
nova-ext-demo does), one per configuration, measures the same thing in
each, and reports the numbers and their ratios. It never fails because of
a timing; it exits non-zero only if a cloud failed or a correctness check
made on the way failed (``list``: the index and Nova answered a query
differently; ``ingest``: a change never reached the index).
"""

import argparse
import importlib
import os
import shutil
import sys
import tempfile

# Names and targets only: nothing of Nova's is imported before main() has
# chosen its concurrency mode.
from nova_ext_tools.bench import listquery

#: Each benchmark: its subcommand, and the module whose run(args) runs it.
BENCHMARKS = {
    'seams': 'nova_ext_tools.bench.seams',
    'list': 'nova_ext_tools.bench.listing',
    'ingest': 'nova_ext_tools.bench.ingest',
    'schedule': 'nova_ext_tools.bench.schedule',
    'writes': 'nova_ext_tools.bench.writes',
    'cloud': 'nova_ext_tools.bench.cloudbench',
}
#: Benchmarks of a running real cloud (tox -e cloud): nothing of Nova's
#: runs in the benchmark's own process.
REAL_CLOUD = ('cloud',)


def _at_least(minimum):
    def parse(text):
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError('must be at least %d' % minimum)
        return value
    return parse


def _add_output(parser, benchmark):
    default = os.path.join('.', 'bench-results', benchmark + '.json')
    parser.add_argument('--output', default=default,
                        help='JSON results file (default %s)' % default)


def _add_seams(subparsers):
    parser = subparsers.add_parser(
        'seams', help='what attaching nova_ext, with nothing enabled, '
                      'costs stock Nova',
        description='Boot stock Nova, then Nova with every nova_ext seam '
                    'attached and nothing enabled, with identical servers; '
                    'compare server listing latency and the cost of '
                    'emitting versioned notifications.')
    parser.add_argument('--cells', type=_at_least(1), default=2,
                        help='number of cells besides cell0 (default 2)')
    parser.add_argument('--servers', type=_at_least(1), default=200,
                        help='servers, spread over the cells (default 200)')
    parser.add_argument('--repeat', type=_at_least(1), default=15,
                        help='timed requests per endpoint, after 2 '
                             'warm-ups (default 15)')
    parser.add_argument('--notifications', type=_at_least(1), default=2000,
                        help='versioned notifications per timed round '
                             '(default 2000)')
    _add_output(parser, 'seams')


def _cell_counts(text):
    try:
        counts = sorted({int(n) for n in text.split(',')})
    except ValueError:
        raise argparse.ArgumentTypeError('a comma-separated list of numbers')
    if not counts or counts[0] < 1:
        raise argparse.ArgumentTypeError('cell counts must be at least 1')
    return counts


def _index_paths(text):
    paths = [name.strip() for name in text.split(',') if name.strip()]
    if not paths or set(paths) - set(listquery.INDEXED):
        raise argparse.ArgumentTypeError(
            'a comma-separated list of %s' % ', '.join(listquery.INDEXED))
    # In the benchmark's own order, whatever the order given.
    return tuple(path for path in listquery.INDEXED if path in paths)


def _add_list(subparsers):
    parser = subparsers.add_parser(
        'list', help='GET /servers through the instance index against '
                     'stock Nova, for several numbers of cells',
        description='For each number of cells, boot a cloud, clone servers '
                    'into its cell databases, sync the instance index, and '
                    'time the same list queries through the index and '
                    "through Nova's own path in that cloud, with a bare "
                    'reference; check that both paths answer the same.')
    parser.add_argument('--cells', type=_cell_counts, default=[2, 8, 32],
                        help='comma-separated numbers of cells, one cloud '
                             'each (default 2,8,32)')
    parser.add_argument('--per-cell', type=_at_least(1), default=2000,
                        help='servers in each cell (default 2000)')
    parser.add_argument('--repeat', type=_at_least(1), default=5,
                        help='timed requests per query and path (and per '
                             'process, see --processes), after 2 warm-ups '
                             '(default 5)')
    parser.add_argument('--processes', type=_at_least(1), default=3,
                        help='processes forked from the benchmark in which '
                             'each index path and the bare reference are '
                             'timed, one after another; their samples are '
                             'pooled and their medians reported apart '
                             '(default 3)')
    parser.add_argument('--paths', type=_index_paths,
                        default=listquery.INDEXED,
                        help='comma-separated index paths timed in those '
                             'processes (default %s); every index path\'s '
                             "first answers are still compared with Nova's, "
                             "and Nova's path is always timed. churn is "
                             'cached with a tenth of each page changed in '
                             'the cells (and marked by change capture) '
                             'before each request. Timing one path alone '
                             'affords more --processes in the same time: a '
                             'cached child takes about a quarter of an '
                             'index child\'s time' % ','.join(
                                 listquery.INDEXED))
    _add_output(parser, 'list')
    parser.add_argument('--plot',
                        default=os.path.join('.', 'bench-results',
                                             'list.png'),
                        help='PNG plot of latency against cells (default '
                             './bench-results/list.png)')


def _rates(text):
    try:
        rates = [int(n) for n in text.split(',')]
    except ValueError:
        raise argparse.ArgumentTypeError('a comma-separated list of numbers')
    if not rates or min(rates) < 1:
        raise argparse.ArgumentTypeError('rates must be at least 1')
    return rates


def _seconds(text):
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError('must be more than 0')
    return value


def _add_ingest(subparsers):
    parser = subparsers.add_parser(
        'ingest', help='how many changes per second the instance index '
                       'applies, and how soon a change is visible in it',
        description='Boot a cloud, clone servers into its cell databases, '
                    'sync the instance index (SQLite), then change servers '
                    'and notify the index: time marking and applying, '
                    'alone and through the in-process consumer and its '
                    'worker, and the delay from mark to visible in the '
                    'index at steady rates.')
    parser.add_argument('--cells', type=_at_least(1), default=2,
                        help='number of cells besides cell0 (default 2)')
    parser.add_argument('--per-cell', type=_at_least(1), default=1000,
                        help='servers in each cell (default 1000)')
    parser.add_argument('--changes', type=_at_least(1), default=2000,
                        help='changes per throughput round, each to a '
                             'different server (default 2000, at most '
                             'the number of servers)')
    parser.add_argument('--rounds', type=_at_least(1), default=3,
                        help='throughput rounds (default 3)')
    parser.add_argument('--rates', type=_rates, default=[100, 500],
                        help='comma-separated changes per second offered '
                             'in the freshness runs (default 100,500)')
    parser.add_argument('--duration', type=_seconds, default=10.0,
                        help='seconds of each freshness run (default 10)')
    _add_output(parser, 'ingest')


def _add_schedule(subparsers):
    parser = subparsers.add_parser(
        'schedule', help='NoValidHost rate and time per request with a '
                         'growing share of disabled or down computes, '
                         'stock Nova against nova_ext filters',
        description='Add fake compute node providers to placement, mark a '
                    'growing share disabled or down, and ask placement '
                    'for candidates as stock Nova and as nova_ext with '
                    'compute-down.')
    parser.add_argument('--nodes', type=_at_least(1), default=500,
                        help='fake compute nodes (default 500)')
    parser.add_argument('--limit', type=_at_least(1), default=10,
                        help='[scheduler]max_placement_results (default 10)')
    parser.add_argument('--requests', type=_at_least(1), default=100,
                        help='requests per share and filter set '
                             '(default 100)')
    parser.add_argument('--seed', type=int, default=1)
    _add_output(parser, 'schedule')


def _add_writes(subparsers):
    parser = subparsers.add_parser(
        'writes', help='what change capture adds to booting and deleting '
                       'servers',
        description='Boot and delete servers through the API of one cloud, '
                    'in turns with [nova_ext_index]capture off and on; '
                    'compare the time of each request.')
    parser.add_argument('--cells', type=_at_least(1), default=2,
                        help='number of cells besides cell0 (default 2)')
    parser.add_argument('--servers', type=_at_least(1), default=20,
                        help='servers booted and deleted per batch '
                             '(default 20)')
    parser.add_argument('--turns', type=_at_least(1), default=5,
                        help='turns, each one batch per mode (default 5)')
    _add_output(parser, 'writes')


def _add_cloud(subparsers):
    parser = subparsers.add_parser(
        'cloud', help='both nova-apis of the running real cloud (tox -e '
                      'cloud), under concurrent clients and writes',
        description='Fill the running real cloud (tox -e cloud) with '
                    'servers through its API, check that nova_ext answers '
                    'each query as Nova does, then time the queries '
                    'through the stock nova-api, nova_ext\'s and a floor '
                    '(the same pipeline answering a stored page), '
                    'interleaved, for several numbers of concurrent '
                    'clients, without and with writes running.')
    parser.add_argument('--state', default=None,
                        help='the cloud\'s state directory (default '
                             '$NOVA_EXT_CLOUD_STATE, else ./.cloud)')
    parser.add_argument('--per-cell', type=_at_least(1), default=1000,
                        help='servers in each cell (default 1000)')
    parser.add_argument('--booted', type=_at_least(1), default=100,
                        help='of those, servers booted through the API in '
                             'each cell; the others are clones of their '
                             'database rows (default 100)')
    parser.add_argument('--clients', type=_rates, default=[1, 4, 8],
                        help='comma-separated numbers of concurrent '
                             'clients (default 1,4,8)')
    parser.add_argument('--rounds', type=_at_least(1), default=2,
                        help='rounds of the four interleaved phases per '
                             'query and number of clients (default 2)')
    parser.add_argument('--requests', type=_at_least(1), default=5,
                        help='requests per client in a phase of nova_ext '
                             'or the floor (default 5)')
    parser.add_argument('--tail-requests', type=_at_least(1), default=200,
                        help='requests of a phase of nova_ext at least, '
                             'its clients sending more than --requests '
                             'each where needed, so that its p99 is not '
                             'its slowest request (default 200)')
    parser.add_argument('--stock-requests', type=_at_least(1), default=1,
                        help='requests per client in a stock phase '
                             '(default 1)')
    parser.add_argument('--write-rate', type=_seconds, default=2.0,
                        help='writes per second while writes run '
                             '(default 2)')
    parser.add_argument('--write-pool', type=_at_least(1), default=40,
                        help='servers the writes go to in turn '
                             '(default 40)')
    parser.add_argument('--profile', type=int, default=30,
                        help='seconds for which the stacks of nova_ext\'s '
                             'nova-api are sampled under one client, after '
                             'the timings, '
                             'for a breakdown of its requests by component '
                             '(detail admin, index admin); 0: none '
                             '(default 30)')
    _add_output(parser, 'cloud')


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog='nova-ext-bench', description=__doc__.split('\n')[0])
    subparsers = parser.add_subparsers(dest='benchmark', metavar='BENCHMARK',
                                       required=True)
    _add_seams(subparsers)
    _add_list(subparsers)
    _add_ingest(subparsers)
    _add_schedule(subparsers)
    _add_writes(subparsers)
    _add_cloud(subparsers)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    args.output = os.path.abspath(args.output)
    if getattr(args, 'plot', None):
        args.plot = os.path.abspath(args.plot)
        os.makedirs(os.path.dirname(args.plot), exist_ok=True)
    workdir = tempfile.mkdtemp(prefix='nova-ext-bench-')
    # Native threads, the production default of nova-api, unless asked
    # otherwise; this must be chosen before Nova is imported.
    os.environ.setdefault('OS_NOVA_DISABLE_EVENTLET_PATCHING', '1')
    os.environ['TMPDIR'] = workdir
    tempfile.tempdir = workdir
    try:
        return _run(args)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _run(args):
    if args.benchmark in REAL_CLOUD:
        return importlib.import_module(BENCHMARKS[args.benchmark]).run(args)
    from nova_ext.tests import functional  # noqa: F401  (Nova's patching)

    return importlib.import_module(BENCHMARKS[args.benchmark]).run(args)


if __name__ == '__main__':
    sys.exit(main())
