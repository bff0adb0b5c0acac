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

"""Print one closing line for every stestr run in this checkout.

CI runs unit and functional tests as separate stestr runs in one repository
(.stestr); this sums them into a single 'N passed, N failed, N skipped'
line, the form CI reads, after the end of each failed test's traceback:
CI shows the tail of what a run printed, and with several tox
environments in parallel the failure would otherwise be far above it.

    python tools/test_summary.py [STESTR]
"""

import collections
import io
import subprocess
import sys

import subunit
import testtools


def run_ids(stestr):
    out = subprocess.run([stestr, 'history', 'list'], check=True,
                         capture_output=True, text=True).stdout
    ids = []
    for line in out.splitlines():
        cells = [c.strip() for c in line.split('|') if c.strip()]
        if cells and cells[0].isdigit():
            ids.append(cells[0])
    return ids


#: Lines of a failed test's traceback printed, from its end, and failed
#: tests printed at most.
TRACEBACK_LINES, FAILURES = 25, 10


def count(stestr, run_id, totals, failures=None):
    stream = subprocess.run([stestr, 'history', 'show', '--subunit', run_id],
                            check=True, capture_output=True).stdout
    statuses = {}

    def on_test(test):
        statuses[test['id']] = test['status']
        if failures is not None and test['status'] in ('fail', 'uxsuccess'):
            details = test.get('details') or {}
            text = ''.join(
                details[name].as_text() for name in ('traceback', 'reason')
                if name in details)
            failures[test['id']] = text
    case = subunit.ByteStreamToStreamResult(io.BytesIO(stream))
    result = testtools.StreamToDict(on_test)
    result.startTestRun()
    case.run(result)
    result.stopTestRun()
    for status in statuses.values():
        totals[status] += 1


def main(argv):
    stestr = argv[1] if len(argv) > 1 else 'stestr'
    totals = collections.Counter()
    failures = {}
    for run_id in run_ids(stestr):
        count(stestr, run_id, totals, failures)
    shown = sorted(failures.items())[:FAILURES]
    for test_id, text in shown:
        print('FAILED %s' % test_id)
        for line in text.rstrip().splitlines()[-TRACEBACK_LINES:]:
            print('    %s' % line)
    # A line each, next to the closing line, for a reader that sees only
    # a window of the output.
    for test_id, text in shown:
        lines = text.strip().splitlines()
        print('FAILED %s: %s' % (test_id, lines[-1][:300] if lines else ''))
    passed = totals['success'] + totals['xfail']
    failed = totals['fail'] + totals['uxsuccess']
    print('tests: %d passed, %d failed, %d skipped'
          % (passed, failed, totals['skip']))
    return 1 if failed or not passed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
