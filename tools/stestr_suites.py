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
"""

import contextlib
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
        ran = _stestr('--repo-url', private, '--test-path', test_path,
                      '--top-dir', top_dir, 'run', *run_args)
        ours = os.path.join(private, REPOSITORY)
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
