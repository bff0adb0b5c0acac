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
"""nova-ext-manage db online_data_migrations: the runner."""

import argparse
import contextlib
import io
import json
from unittest import mock

from nova_ext.cmd import manage
from nova_ext.cmd import manage_db
from nova_ext.object_migrations import base as om_base
from nova_ext.tests.unit import base


class _Fake(om_base.ObjectMigration):

    def __init__(self, results, left=0, fail=False):
        self.results, self.left, self.fail = list(results), left, fail
        self.calls = []

    def __call__(self, context, max_count):
        self.calls.append(max_count)
        if self.fail:
            raise RuntimeError('boom')
        return self.results.pop(0) if self.results else (0, 0)

    def remaining(self, context):
        return self.left


class TestRunner(base.TestCase):

    def test_batch_budget_is_shared(self):
        a, b, c = _Fake([(3, 3)]), _Fake([(5, 2)]), _Fake([])
        results, errors = manage_db.run_batch(
            None, [('a', a), ('b', b), ('c', c)], 5)
        self.assertEqual({'a': (3, 3), 'b': (5, 2)}, results)
        self.assertEqual(([5], [2], []), (a.calls, b.calls, c.calls))
        self.assertEqual([], errors)

    def run_cmd(self, migrations, max_count=None, fmt=None):
        argv = ['db', 'online_data_migrations']
        if max_count:
            argv += ['--max-count', str(max_count)]
        if fmt:
            argv += ['--format', fmt]
        args = manage.build_parser().parse_args(argv)
        cell = mock.Mock(identity='cell1')
        out = io.StringIO()
        with mock.patch('nova_ext.object_migrations.load_migrations',
                        return_value=migrations), \
                mock.patch('nova.context.target_cell',
                           lambda ctx, cell: contextlib.nullcontext(ctx)):
            code = manage_db.run(None, None, args, out=out, cells=[cell])
        return code, out.getvalue()

    def test_exit_codes(self):
        fake = _Fake([(1, 1), (1, 1), (0, 0)])
        code, out = self.run_cmd([('a', fake)])
        self.assertEqual(0, code, out)
        self.assertEqual([50, 50, 50], fake.calls)
        self.assertRegex(out, r'\|\s+a\s+\|\s+cell1\s+\|\s+2\s+\|\s+2\s+'
                              r'\|\s+0\s+\|')
        self.assertEqual(1, self.run_cmd([('a', _Fake([(1, 1)], left=4))],
                                         max_count=1)[0])
        code, out = self.run_cmd([('a', _Fake([], fail=True)),
                                  ('b', _Fake([(1, 1)]))])
        self.assertEqual(2, code)
        self.assertIn('a in cell1 failed: RuntimeError: boom', out)
        self.assertEqual((0, 'No migrations enabled in '
                          '[nova_ext_object_migrations] migrations.\n'),
                         self.run_cmd([]))

    def test_json(self):
        code, out = self.run_cmd([('a', _Fake([], fail=True)),
                                  ('b', _Fake([(3, 1), (0, 0)], left=2))],
                                 fmt='json')
        self.assertEqual(2, code)
        self.assertEqual(
            {'migrations': [
                {'migration': 'a', 'cell': 'cell1', 'found': 0, 'done': 0,
                 'remaining': 0},
                {'migration': 'b', 'cell': 'cell1', 'found': 3, 'done': 1,
                 'remaining': 2}],
             # One per batch it raised in: the first did work (b's), so
             # a second ran.
             'errors': [{'migration': 'a', 'cell': 'cell1',
                         'error': 'RuntimeError: boom'}] * 2},
            json.loads(out))
        self.assertEqual({'migrations': [], 'errors': []},
                         json.loads(self.run_cmd([], fmt='json')[1]))

    def test_bad_max_count(self):
        args = argparse.Namespace(max_count=0)
        self.assertEqual(127, manage_db.run(None, None, args,
                                            out=io.StringIO()))
