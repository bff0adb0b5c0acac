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
"""nova-ext-manage's command line, parsed by oslo.config as nova-manage's.

``main()`` runs in-process on Nova's CONF with the handlers replaced: what
is proven is which handler each command line reaches, with which
arguments, and the exit codes and output of what never reaches one.
"""

import io
import os
from unittest import mock

import fixtures
from nova import config

from nova_ext.cmd import common
from nova_ext.cmd import compute_ids
from nova_ext.cmd import manage
from nova_ext.cmd import manage_db
from nova_ext.cmd import manage_index
from nova_ext.tests.unit import base

#: Every argument any command has; a handler reads the others as absent.
DESTS = ('command', 'revision', 'cell', 'since', 'restart', 'fix', 'format',
         'max_count')

ABSENT = object()

INDEX = (manage_index, 'run')
ODM = (manage_db, 'run')
API_DB = (manage_db, 'run_api_db')
AUDIT = (compute_ids, 'run')

#: (command line, the handler it runs, the arguments that handler reads).
COMMANDS = [
    (['index', 'db_sync'], INDEX, {'command': 'db_sync', 'revision': 'head'}),
    (['index', 'db_sync', '--revision', '0003'], INDEX,
     {'command': 'db_sync', 'revision': '0003'}),
    (['index', 'sync'], INDEX,
     {'command': 'sync', 'cell': None, 'since': None, 'restart': False}),
    (['index', 'sync', '--cell', 'cell1', '--since', '2024-01-02T03:04:05',
      '--restart'], INDEX,
     {'command': 'sync', 'cell': 'cell1', 'since': '2024-01-02T03:04:05',
      'restart': True}),
    (['index', 'verify'], INDEX,
     {'command': 'verify', 'cell': None, 'fix': False, 'format': 'table'}),
    (['index', 'verify', '--cell', 'cell2', '--fix', '--format', 'json'],
     INDEX,
     {'command': 'verify', 'cell': 'cell2', 'fix': True, 'format': 'json'}),
    (['index', 'status'], INDEX, {'command': 'status', 'format': 'table'}),
    (['index', 'status', '--format', 'json'], INDEX,
     {'command': 'status', 'format': 'json'}),
    (['index', 'purge'], INDEX, {'command': 'purge'}),
    (['db', 'online_data_migrations'], ODM,
     {'command': 'online_data_migrations', 'max_count': None,
      'format': 'table'}),
    (['db', 'online_data_migrations', '--max-count', '7', '--format',
      'json'], ODM,
     {'command': 'online_data_migrations', 'max_count': 7,
      'format': 'json'}),
    (['api_db', 'sync'], API_DB,
     {'command': 'sync', 'revision': 'head', 'format': 'table'}),
    (['api_db', 'sync', '--revision', '0001', '--format', 'json'], API_DB,
     {'command': 'sync', 'revision': '0001', 'format': 'json'}),
    (['api_db', 'version'], API_DB, {'command': 'version', 'format': 'table'}),
    (['api_db', 'version', '--format', 'json'], API_DB,
     {'command': 'version', 'format': 'json'}),
    (['compute-ids', 'audit'], AUDIT, {'command': 'audit', 'format': 'table'}),
    (['compute-ids', 'audit', '--format', 'json'], AUDIT,
     {'command': 'audit', 'format': 'json'}),
]


class TestMain(base.TestCase):

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        self.conf_file = os.path.join(tmp, 'nova.conf')
        with open(self.conf_file, 'w') as f:
            f.write('[DEFAULT]\nstate_path = %s\n' % tmp)
        # An empty directory: no default one of this machine is read.
        self.conf_dir = os.path.join(tmp, 'nova.conf.d')
        os.mkdir(self.conf_dir)
        self.stdout = self.useFixture(
            fixtures.MonkeyPatch('sys.stdout', io.StringIO())).new_value
        self.stderr = self.useFixture(
            fixtures.MonkeyPatch('sys.stderr', io.StringIO())).new_value
        # Nova's process-wide logging and database facades are left alone.
        for target in (common.logging, 'setup'), (
                config.main_db_api, 'configure'), (
                config.api_db_api, 'configure'):
            self.useFixture(fixtures.MockPatchObject(*target))
        self.seen = []
        self.handlers = {}
        for module, name in (INDEX, ODM, API_DB, AUDIT):
            self.handlers[(module, name)] = self.useFixture(
                fixtures.MockPatchObject(module, name,
                                         side_effect=self._handler)).mock

    def _handler(self, ctx, conf, args, out=None):
        # CONF is cleared when main() returns: read everything now.
        self.seen.append({
            'conf': conf, 'category': args.name,
            'args': {k: getattr(args, k, ABSENT) for k in DESTS},
            'use_stderr': conf.use_stderr, 'debug': conf.debug,
            'log_file': conf.log_file})
        return 0

    def main(self, *argv):
        return manage.main(['--config-file', self.conf_file,
                            '--config-dir', self.conf_dir] + list(argv))

    def test_each_command_reaches_its_handler_with_its_arguments(self):
        for argv, handler, want in COMMANDS:
            for mock_handler in self.handlers.values():
                mock_handler.reset_mock()
            del self.seen[:]
            self.assertEqual(0, self.main(*argv), argv)
            self.handlers[handler].assert_called_once_with(
                mock.ANY, config.CONF, mock.ANY)
            self.assertEqual(1, sum(h.call_count
                                    for h in self.handlers.values()), argv)
            seen = self.seen[0]
            self.assertEqual(argv[0], seen['category'])
            want = {k: want.get(k, ABSENT) for k in DESTS}
            self.assertEqual(want, seen['args'], argv)
            # The parser of the CLI reference and of the tools is the same.
            parsed = vars(manage.build_parser().parse_args(argv))
            self.assertEqual(argv[0], parsed.pop('category'))
            self.assertEqual({k: v for k, v in want.items()
                              if v is not ABSENT}, parsed, argv)
        self.assertEqual('', self.stdout.getvalue())
        self.assertEqual('', self.stderr.getvalue())

    def test_results_on_stdout_logs_on_stderr(self):
        self.assertEqual(0, self.main('index', 'status', '--format', 'json'))
        self.assertTrue(self.seen[0]['use_stderr'])
        self.assertFalse(self.seen[0]['debug'])

    def test_oslo_log_options(self):
        log_file = os.path.join(self.conf_dir, 'manage.log')
        self.assertEqual(0, self.main('--debug', '--log-file', log_file,
                                      'compute-ids', 'audit'))
        self.assertEqual((True, log_file), (self.seen[0]['debug'],
                                            self.seen[0]['log_file']))

    def test_the_command_line_does_not_stay_on_conf(self):
        self.assertEqual(0, self.main('index', 'purge'))
        self.assertNotIn(manage.category_opt.dest, config.CONF)
        # A second run registers it again: nothing is left parsed.
        self.assertEqual(0, self.main('index', 'purge'))
        self.assertNotIn(manage.category_opt.dest, config.CONF)

    def test_usage_errors_exit_2(self):
        for argv in ([], ['bogus'], ['index'], ['index', 'bogus'],
                     ['--bogus', 'index', 'purge'],
                     ['index', 'verify', '--format', 'xml'],
                     ['db', 'online_data_migrations', '--max-count', 'x'],
                     ['compute-ids', 'audit', '--fix']):
            self.stderr.seek(0)
            self.stderr.truncate()
            raised = self.assertRaises(SystemExit, self.main, *argv)
            self.assertEqual(2, raised.code, argv)
            self.assertIn('usage: nova-ext-manage', self.stderr.getvalue())
            self.assertNotIn(manage.category_opt.dest, config.CONF)
        self.assertEqual('', self.stdout.getvalue())
        self.assertEqual([], self.seen)

    def test_version_is_nova_exts(self):
        for argv in (['--version'], ['--config-file', self.conf_file,
                                     '--version']):
            self.stdout.seek(0)
            self.stdout.truncate()
            raised = self.assertRaises(SystemExit, manage.main, argv)
            self.assertEqual(0, raised.code)
            self.assertEqual(common.version() + '\n', self.stdout.getvalue())
        self.assertEqual([], self.seen)

    def test_a_missing_configuration_file_is_one_line(self):
        missing = os.path.join(self.conf_dir, 'nope.conf')
        self.assertEqual(manage.ERROR, manage.main(
            ['--config-file', missing, 'index', 'status']))
        self.assertEqual('nova-ext-manage: ConfigFilesNotFoundError: Failed '
                         'to find some config files: %s\n' % missing,
                         self.stderr.getvalue())
        self.assertEqual('', self.stdout.getvalue())
        self.assertEqual([], self.seen)
        self.assertNotIn(manage.category_opt.dest, config.CONF)

    def test_a_handler_that_raises_is_one_line(self):
        self.handlers[API_DB].side_effect = RuntimeError('boom')
        self.assertEqual(manage.ERROR, self.main('api_db', 'version'))
        self.assertEqual('nova-ext-manage: RuntimeError: boom\n',
                         self.stderr.getvalue())
        self.assertEqual('', self.stdout.getvalue())
