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
"""The demo's printed report: sections, tables and checks."""

import sys


class Report(object):

    def __init__(self, stream=None):
        self.stream = stream or sys.stdout
        self.checks = []

    def section(self, title):
        self.stream.write('\n== %s ==\n' % title)

    def line(self, text='', *args):
        self.stream.write((text % args if args else text) + '\n')

    def table(self, headers, rows):
        rows = [[str(c) for c in row] for row in rows]
        widths = [max([len(h)] + [len(r[i]) for r in rows])
                  for i, h in enumerate(headers)]
        fmt = '  '.join('%%-%ds' % w for w in widths)
        self.line('  ' + fmt % tuple(headers))
        self.line('  ' + '  '.join('-' * w for w in widths))
        for row in rows:
            self.line('  ' + fmt % tuple(row))

    def check(self, ok, text):
        """Record and print one claim the demo verifies."""
        self.checks.append((bool(ok), text))
        self.line('  [%s] %s', 'ok' if ok else 'FAILED', text)
        return ok

    @property
    def failed(self):
        return [text for ok, text in self.checks if not ok]

    def summary(self):
        self.section('Summary')
        self.line('%d checks, %d failed', len(self.checks), len(self.failed))
        for text in self.failed:
            self.line('  FAILED: %s', text)
