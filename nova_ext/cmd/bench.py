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
a timing; it exits non-zero only if a cloud failed.
"""

import argparse
import importlib
import os
import shutil
import sys
import tempfile

#: Each benchmark: its subcommand, and the module whose run(args) runs it.
BENCHMARKS = {
    'seams': 'nova_ext.bench.seams',
}


def _at_least(minimum):
    def parse(text):
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError('must be at least %d' % minimum)
        return value
    return parse


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
    parser.add_argument('--output',
                        default=os.path.join('.', 'bench-results',
                                             'seams.json'),
                        help='JSON results file (default '
                             './bench-results/seams.json)')


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog='nova-ext-bench', description=__doc__.split('\n')[0])
    subparsers = parser.add_subparsers(dest='benchmark', metavar='BENCHMARK',
                                       required=True)
    _add_seams(subparsers)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    args.output = os.path.abspath(args.output)
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
    from nova_ext.tests import functional  # noqa: F401  (Nova's patching)

    return importlib.import_module(BENCHMARKS[args.benchmark]).run(args)


if __name__ == '__main__':
    sys.exit(main())
