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
"""nova-ext-demo: boot an embedded multi-cell Nova with nova_ext and tour it.

Everything runs in this process: Nova's API, conductor, scheduler and
computes (fake virt driver), real placement, SQLite databases in a
temporary directory that is removed on exit.
"""

import argparse
import os
import shutil
import sys
import tempfile


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog='nova-ext-demo', description=__doc__.split('\n')[0])
    parser.add_argument('--cells', type=int, default=2,
                        help='number of cells besides cell0 (default 2)')
    parser.add_argument('--computes', type=int, default=1,
                        help='nova-compute services per cell (default 1)')
    parser.add_argument('--servers', type=int, default=4,
                        help='servers to boot, spread over the computes '
                             '(default 4)')
    parser.add_argument('--scenes', default=None,
                        help='comma-separated scenes to run (default all)')
    args = parser.parse_args(argv)
    for name in ('cells', 'computes'):
        if getattr(args, name) < 1:
            parser.error('--%s must be at least 1' % name)
    if args.servers < 0:
        parser.error('--servers must not be negative')
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    workdir = tempfile.mkdtemp(prefix='nova-ext-demo-')
    # Native threads, the production default of nova-api, unless asked
    # otherwise; this must be chosen before Nova is imported.
    os.environ.setdefault('OS_NOVA_DISABLE_EVENTLET_PATCHING', '1')
    os.environ['TMPDIR'] = workdir
    tempfile.tempdir = workdir
    try:
        return _run(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _run(args, workdir):
    from nova_ext.tests import functional  # noqa: F401  (Nova's patching)

    from nova_ext_tools.demo import cloud
    from nova_ext_tools.demo import report as report_mod
    from nova_ext_tools.demo import scenes

    wanted = (args.scenes.split(',') if args.scenes
              else [name for name, _ in scenes.SCENES])
    unknown = set(wanted) - {name for name, _ in scenes.SCENES}
    if unknown:
        sys.stderr.write('unknown scenes: %s\n' % ', '.join(sorted(unknown)))
        return 2
    report = report_mod.Report()
    report.line('nova-ext-demo: %d cells + cell0, %d compute(s) per cell, '
                'state in %s (removed on exit)', args.cells, args.computes,
                workdir)

    def tour(the_cloud):
        for name, scene in scenes.SCENES:
            if name in wanted:
                scene(the_cloud, report, args)

    errors = cloud.run(tour, cells=args.cells,
                       computes_per_cell=args.computes)
    for test_id, error in errors:
        report.section('The demo cloud failed')
        report.line('%s', error)
    report.summary()
    return 1 if errors or report.failed else 0


if __name__ == '__main__':
    sys.exit(main())
