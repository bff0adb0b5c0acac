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
"""A benchmark's results: a printed table and a JSON file."""

import json
import os
import platform
import sys
import textwrap

STOCK, ATTACHED = 'stock', 'nova_ext'


def python_version():
    return '%s %s' % (platform.python_implementation(),
                      platform.python_version())


def cpu_count():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count()


def load_average():
    """The machine's 1, 5 and 15-minute loads, to two decimals."""
    return [round(x, 2) for x in os.getloadavg()]


def show(results, headers, stream=None):
    """Print the environment, then one row per metric."""
    stream = stream or sys.stdout
    stream.write('\n== nova-ext-bench %s ==\n' % results['benchmark'])
    for key, value in results['environment'].items():
        if isinstance(value, dict):
            value = ', '.join('%s %s' % item for item in value.items())
        elif isinstance(value, (list, tuple)):
            value = ', '.join(str(v) for v in value)
        stream.write('%s: %s\n' % (key.replace('_', ' '), value))
    stream.write('\n')
    rows = [(m['metric'], _value(m[STOCK], m['unit']),
             _value(m[ATTACHED], m['unit']), _ratio(m['ratio']))
            for m in results['metrics']]
    table(headers, rows, stream)
    for note in results.get('notes', ()):
        stream.write('\n%s\n' % textwrap.fill(
            note, 78, initial_indent='* ', subsequent_indent='  '))


def table(headers, rows, stream):
    widths = [max(len(str(row[i])) for row in [headers] + rows)
              for i in range(len(headers))]
    # The metric is left-aligned, the numbers right-aligned.
    fmt = ' | '.join(['%%-%ds' % widths[0]] +
                     ['%%%ds' % w for w in widths[1:]])
    stream.write(fmt % tuple(headers) + '\n')
    stream.write('-+-'.join('-' * w for w in widths) + '\n')
    for row in rows:
        stream.write(fmt % tuple(row) + '\n')


def write_json(results, path):
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with open(path, 'w') as f:
        json.dump(results, f, indent=2, sort_keys=True)
        f.write('\n')


def _value(value, unit):
    return '-' if value is None else '%.1f %s' % (value, unit)


def _ratio(ratio):
    return '-' if ratio is None else '%.3f' % ratio
