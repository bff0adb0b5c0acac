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

"""Run several test suites, each one stestr run, with the same arguments.

    python tools/stestr_suites.py TEST_PATH:TOP_DIR [...] -- [RUN ARGS]

tox runs nova_ext's tests and those of its developer tools
(tools/nova-ext-tools) as two suites: each is a stestr run of its own in
the checkout's one repository (.stestr), which tools/test_summary.py sums.

tox runs the unit, functional and deployment envs in parallel, and
stestr's file repository takes no lock while it records a run (its id,
the failing tests, the times). So each suite runs in a private copy of the
checkout's repository, which gives it the failing tests and times that
--failing and the partition of tests among workers read, and its runs are
then loaded into the checkout's repository under a lock (.stestr.lock).

stestr fails a run that selects no test. So that ``tox -e functional --
REGEX`` works whichever suite REGEX names, a suite in which the selection
(filters, --include-list, --exclude-list, --exclude-regex, --load-list,
--failing, --no-discover, --pdb) finds no test is skipped, and the command
fails only if it finds none in any suite. A suite whose tests cannot be
discovered is run anyway, for stestr to report it and fail. Every suite
selected is run, even after one failed; the exit code is the first
suite's that failed.

stestr shares the tests out among its workers by the times its repository
recorded, and deals the tests it has no time for round robin. A clean
checkout (CI) has none, and the functional suite's two workers may then
end minutes apart. So each suite's private repository is given the
times of tools/test-times.txt for every test it has no time of its own
for. After a full run, ``python tools/stestr_suites.py --write-times``
writes that file again from the checkout's repository.
"""

import contextlib
from dbm import dumb as stestr_dbm
import fcntl
import os
import shutil
import subprocess
import sys
import tempfile

from stestr.commands import run as stestr_run
from stestr.repository import abstract as stestr_repository
from stestr.repository import util as stestr_repo_util
from stestr import selection
from stestr import testlist


def parse(argv):
    if '--' in argv:
        at = argv.index('--')
        suites, run_args = argv[:at], argv[at + 1:]
    else:
        suites, run_args = argv, []
    if not suites:
        raise SystemExit(__doc__)
    pairs = []
    for suite in suites:
        test_path, _, top_dir = suite.partition(':')
        pairs.append((test_path, top_dir or '.'))
    return pairs, run_args


def _run_parser():
    return stestr_run.Run(None, None).get_parser('stestr run')


def _discovered(test_path, top_dir):
    """The suite's test ids, as stestr discovers them; None if it fails."""
    listed = subprocess.run(
        [sys.executable, '-m', 'stestr.subunit_runner.run', 'discover',
         '-t', top_dir, test_path, '--list'], capture_output=True)
    if listed.returncode != 0:
        return None
    return testlist.parse_enumeration(listed.stdout)


def _listed(options):
    """The ids --load-list and --failing restrict the run to, or None."""
    listed = None
    if options.load_list:
        with open(options.load_list, 'rb') as ids:
            listed = set(testlist.parse_list(ids.read()))
    if options.failing:
        try:
            repo = stestr_repo_util.get_repo_open()
        except stestr_repository.RepositoryNotFound:
            failing = set()
        else:
            failing = set(stestr_run._find_failing(repo))
        listed = failing if listed is None else listed & failing
    return listed


def _single(options):
    """The one test --no-discover or --pdb names, as a dotted id, or None."""
    name = options.no_discover or options.pdb
    if not name:
        return None
    name = name.replace('::', '.')
    if os.path.sep in name:
        root, _ = os.path.splitext(os.path.normpath(name))
        name = root.replace(os.path.sep, '.')
    return name


def selects(options):
    return bool(options.filters or options.include_list or
                options.exclude_list or options.exclude_regex or
                options.load_list or options.failing or
                options.no_discover or options.pdb)


def matches(options, ids):
    """Whether the selection in ``options`` finds any of ``ids``."""
    single = _single(options)
    if single is not None:
        return any(test_id == single or test_id.startswith(single + '.') or
                   single.startswith(test_id + '.') for test_id in ids)
    listed = _listed(options)
    if listed is not None:
        ids = [test_id for test_id in ids if test_id in listed]
    return bool(selection.construct_list(
        ids, regexes=list(options.filters or ()) or None,
        exclude_list=options.exclude_list,
        include_list=options.include_list,
        exclude_regex=options.exclude_regex))


def main(argv):
    if argv == ['--write-times']:
        return write_times(os.path.join('.', REPOSITORY), TIMES)
    suites, run_args = parse(argv)
    options = _run_parser().parse_args(run_args)
    chosen = []
    for test_path, top_dir in suites:
        if selects(options):
            ids = _discovered(test_path, top_dir)
            if ids is not None and not matches(options, ids):
                print('%s: no test selected, skipped' % test_path)
                continue
        chosen.append((test_path, top_dir))
    if not chosen:
        print('No test in %s is selected by: %s' % (
            ', '.join(path for path, _ in suites), ' '.join(run_args)),
            file=sys.stderr)
        return 1
    status = 0
    for test_path, top_dir in chosen:
        ran = run_suite(test_path, top_dir, run_args)
        status = status or ran
    return status


REPOSITORY = '.stestr'
#: Seconds each test took in a full run (``--write-times``).
TIMES = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                     'test-times.txt')
#: The suites whose times the file keeps: the deployment tests run one at
#: a time, in an order of their own.
TIMED = ('nova_ext.tests.unit.', 'nova_ext.tests.functional.',
         'nova_ext_tools.tests.unit.', 'nova_ext_tools.tests.functional.')


def read_times(path):
    """``{test id: seconds}`` from a file of ``seconds test-id`` lines."""
    times = {}
    if not os.path.exists(path):
        return times
    with open(path) as lines:
        for line in lines:
            seconds, _, test_id = line.strip().partition(' ')
            if test_id:
                times[test_id] = seconds
    return times


def write_times(repository, path):
    """Write the times ``repository`` recorded of TIMED's tests to ``path``.

    :returns: 0, or 1 if the repository has none.
    """
    # 'c', as stestr opens it: a repository without runs has no file yet.
    db = stestr_dbm.open(os.path.join(repository, 'times.dbm'), 'c')
    try:
        times = {key.decode() if isinstance(key, bytes) else key:
                 float(db[key]) for key in db.keys()}
    finally:
        db.close()
    kept = sorted(test_id for test_id in times if test_id.startswith(TIMED))
    if not kept:
        print('%s records no time of %s' % (repository, ', '.join(TIMED)),
              file=sys.stderr)
        return 1
    with open(path, 'w') as out:
        for test_id in kept:
            out.write('%.1f %s\n' % (times[test_id], test_id))
    return 0


def seed_times(repository, times):
    """Give ``repository`` each of ``times`` it records no time for."""
    db = stestr_dbm.open(os.path.join(repository, 'times.dbm'), 'c')
    try:
        for test_id, seconds in times.items():
            if test_id not in db:
                db[test_id] = seconds
    finally:
        db.close()


@contextlib.contextmanager
def _locked(here):
    with open(os.path.join(here, REPOSITORY + '.lock'), 'a') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _stestr(*argv, **kwargs):
    return subprocess.run([sys.executable, '-m', 'stestr'] + list(argv),
                          **kwargs)


def _run_ids(repository):
    return sorted(int(name) for name in os.listdir(repository)
                  if name.isdigit())


def _copy(repository, into):
    """A private copy of ``repository`` at ``into``; its last run id."""
    os.mkdir(into)
    for name in os.listdir(repository):
        source = os.path.join(repository, name)
        # A recorded run is never written again: linked, not copied.
        (os.link if name.isdigit() else shutil.copy2)(
            source, os.path.join(into, name))
    ids = _run_ids(into)
    return ids[-1] if ids else -1


def run_suite(test_path, top_dir, run_args, here='.'):
    """One suite's stestr run, recorded in ``here``'s repository.

    :returns: the run's exit code.
    """
    # Beside the repository, so that its runs can be linked.
    with tempfile.TemporaryDirectory(prefix=REPOSITORY + '-',
                                     dir=here) as private:
        seen = -1
        with _locked(here):
            if os.path.isdir(os.path.join(here, REPOSITORY)):
                seen = _copy(os.path.join(here, REPOSITORY),
                             os.path.join(private, REPOSITORY))
        ours = os.path.join(private, REPOSITORY)
        times = read_times(TIMES)
        if times:
            if not os.path.isdir(ours):
                _stestr('--repo-url', private, 'init',
                        stdout=subprocess.DEVNULL)
            seed_times(ours, times)
        ran = _stestr('--repo-url', private, '--test-path', test_path,
                      '--top-dir', top_dir, 'run', *run_args)
        new = [run for run in _run_ids(ours) if run > seen] \
            if os.path.isdir(ours) else []
        with _locked(here):
            for run in new:
                stream = _stestr('--repo-url', private, 'history', 'show',
                                 '--subunit', str(run), capture_output=True)
                if stream.returncode == 0:
                    _stestr('--repo-url', here, 'load', '--force-init',
                            input=stream.stdout, stdout=subprocess.DEVNULL)
    return ran.returncode


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
