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
"""nova-ext-manage and nova-ext-status as an operator runs them.

Each in its own process with a nova.conf. The result goes to stdout and
nothing else does (logs go to stderr), and a read-only command never
creates the index. With cells mapped by Nova's own nova-manage, every
command reads them without a message broker.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

import fixtures
from oslotest import base as oslotest_base
import pbr.version

from nova_ext.index.upkeep import migration
from nova_ext.tests.functional import sqlserver

BIN = os.path.dirname(sys.executable)
MANAGE = os.path.join(BIN, 'nova-ext-manage')
STATUS = os.path.join(BIN, 'nova-ext-status')

# nova-ext-status with its checks replaced by one that logs a line and
# returns the code given as the first argument.
ONE_CHECK = textwrap.dedent('''
    import sys

    from oslo_log import log as logging
    from oslo_upgradecheck import upgradecheck

    from nova_ext.cmd import status

    def check(self):
        logging.getLogger('nova_ext.cmd.status').warning('checking now')
        return upgradecheck.Result(upgradecheck.Code(int(sys.argv[1])),
                                   'code %s' % sys.argv[1])

    status.Checks._upgrade_checks = (('One', check),)
    sys.exit(status.main(['nova-ext-status'] + sys.argv[2:]))
''')


def map_cells(conf_file):
    """Map cell0 and cell1 as an operator does, with Nova's nova-manage.

    cell1 is on ``[database]connection``; its transport URL names a
    RabbitMQ broker that nothing listens on, so that a command that needs
    one fails.
    """
    rabbit = 'rabbit://nova:secret@127.0.0.1:%d/' % sqlserver._free_port()
    for argv in (['api_db', 'sync'], ['cell_v2', 'map_cell0'],
                 ['cell_v2', 'create_cell', '--name', 'cell1',
                  '--transport-url', rabbit],
                 ['db', 'sync']):
        subprocess.run([os.path.join(BIN, 'nova-manage'), '--config-file',
                        conf_file] + argv, check=True, capture_output=True,
                       timeout=120, stdin=subprocess.DEVNULL)


class TestManageCommand(oslotest_base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.index = os.path.join(self.dir, 'index.sqlite')
        self.conf = os.path.join(self.dir, 'nova.conf')
        with open(self.conf, 'w') as f:
            f.write('[DEFAULT]\nstate_path = %s\n'
                    '[nova_ext_index]\nconnection = sqlite:///%s\n'
                    % (self.dir, self.index))

    def manage(self, *argv):
        return subprocess.run(
            [MANAGE, '--config-file', self.conf] + list(argv),
            capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL)

    def test_read_only_command_on_a_missing_index(self):
        done = self.manage('index', 'status', '--format', 'json')
        self.assertEqual(255, done.returncode, done.stderr)
        self.assertEqual('', done.stdout)
        self.assertIn('does not exist: run "nova-ext-manage index db_sync"',
                      done.stderr)
        self.assertNotIn('Traceback', done.stderr)
        self.assertEqual(['nova.conf'], os.listdir(self.dir))

    def test_a_missing_configuration_file_is_one_line(self):
        done = subprocess.run(
            [MANAGE, '--config-file', os.path.join(self.dir, 'nope.conf'),
             'index', 'status'], capture_output=True, text=True,
            timeout=120, stdin=subprocess.DEVNULL)
        self.assertEqual(255, done.returncode, done.stderr)
        self.assertEqual('', done.stdout)
        self.assertNotIn('Traceback', done.stderr)
        # Eventlet's own deprecation warning may come first.
        self.assertEqual(
            ['nova-ext-manage: ConfigFilesNotFoundError: Failed to find '
             'some config files: %s' % os.path.join(self.dir, 'nope.conf')],
            [line for line in done.stderr.splitlines()
             if line.startswith('nova-ext-manage')], done.stderr)

    def test_a_malformed_transport_url_is_one_line(self):
        with open(self.conf, 'a') as f:
            f.write('[DEFAULT]\ntransport_url = 127.0.0.1\n')
        done = self.manage('index', 'status')
        self.assertEqual(255, done.returncode, done.stderr)
        self.assertNotIn('Traceback', done.stderr)
        self.assertEqual(
            ['nova-ext-manage: Error: [DEFAULT]transport_url: No scheme '
             'specified'],
            [line for line in done.stderr.splitlines()
             if line.startswith('nova-ext-manage')], done.stderr)

    def test_a_usage_error_is_argparse_s(self):
        done = self.manage('index', 'bogus')
        self.assertEqual(2, done.returncode, done.stderr)
        self.assertIn('usage: nova-ext-manage', done.stderr)

    def test_api_db_results_as_json_on_stdout_alone(self):
        with open(self.conf, 'a') as f:
            f.write('[api_database]\nconnection = sqlite:///%s\n'
                    % os.path.join(self.dir, 'api.sqlite'))
        subprocess.run([os.path.join(BIN, 'nova-manage'), '--config-file',
                        self.conf, 'api_db', 'sync'], check=True,
                       capture_output=True, timeout=120)
        for command in ('sync', 'version'):
            done = self.manage('api_db', command, '--format', 'json')
            self.assertEqual(0, done.returncode, done.stderr)
            got = json.loads(done.stdout)
            self.assertEqual(got['head'], got['revision'])

    def test_db_sync_prints_only_its_result(self):
        done = self.manage('index', 'db_sync')
        self.assertEqual(0, done.returncode, done.stderr)
        self.assertEqual('index schema at revision %s\n' % migration.head(),
                         done.stdout)
        self.assertTrue(os.path.exists(self.index))


class TestCommandsWithCellsMapped(oslotest_base.BaseTestCase):
    """A nova.conf of a real cloud: no RPC options, cells mapped.

    nova_ext's commands parse it without RPC, as no command of theirs uses
    the message bus; Nova still needs ``[DEFAULT]transport_url`` registered
    to load a cell mapping.
    """

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # nova-manage maps the cells once for the class, which takes longer
        # than a test: each test starts from a copy of the databases it
        # made, in the same directory, since the cell mappings name it.
        cls.dir = tempfile.mkdtemp(prefix='nova-ext-cli-')
        cls.pristine = tempfile.mkdtemp(prefix='nova-ext-cli-mapped-')
        cls.conf = os.path.join(cls.dir, 'nova.conf')
        with open(cls.conf, 'w') as f:
            f.write(textwrap.dedent("""
                [DEFAULT]
                state_path = {dir}
                [api_database]
                connection = sqlite:///{dir}/api.sqlite
                [database]
                connection = sqlite:///{dir}/cell1.sqlite
                [nova_ext_index]
                connection = sqlite:///{dir}/index.sqlite
                [nova_ext_instance_list]
                driver = index
                [nova_ext_object_migrations]
                migrations = instance-compute-id, migration-dest-compute-id,
                             compute-node-service-id
            """).format(dir=cls.dir))
        try:
            map_cells(cls.conf)
            shutil.copytree(cls.dir, cls.pristine, dirs_exist_ok=True)
        except Exception:
            # tearDownClass does not run when setUpClass fails.
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)
        shutil.rmtree(cls.pristine, ignore_errors=True)
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        shutil.rmtree(self.dir)
        shutil.copytree(self.pristine, self.dir)

    def run_command(self, prog, *argv):
        done = subprocess.run(
            [os.path.join(BIN, prog), '--config-file', self.conf] +
            list(argv), capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL)
        self.assertEqual(0, done.returncode,
                         '%s %s:\n%s' % (prog, ' '.join(argv), done.stderr))
        return done.stdout

    def test_index_commands(self):
        self.run_command('nova-ext-manage', 'index', 'db_sync')
        self.run_command('nova-ext-manage', 'index', 'sync')
        status = json.loads(self.run_command(
            'nova-ext-manage', 'index', 'status', '--format', 'json'))
        self.assertEqual(['cell0', 'cell1'],
                         sorted(c['name'] for c in status['cells']))
        verified = json.loads(self.run_command(
            'nova-ext-manage', 'index', 'verify', '--format', 'json'))
        self.assertEqual(['cell0', 'cell1'],
                         sorted(c['cell_name'] for c in verified))

    def test_online_data_migrations_and_audit(self):
        self.run_command('nova-ext-manage', 'db', 'online_data_migrations')
        audit = json.loads(self.run_command(
            'nova-ext-manage', 'compute-ids', 'audit', '--format', 'json'))
        self.assertEqual(['cell0', 'cell1'], sorted(audit))

    def test_upgrade_check(self):
        self.run_command('nova-ext-manage', 'index', 'db_sync')
        self.run_command('nova-ext-manage', 'index', 'sync')
        checks = json.loads(self.run_command(
            'nova-ext-status', 'upgrade', 'check', '--json'))['checks']
        self.assertEqual({'Compute object ids': 0, 'Instance index': 0,
                          'Rebuild from cell0': 0},
                         {c['check']: c['result'] for c in checks})


class TestStatusCommand(oslotest_base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        # No database: the checks that read one report a failure.
        self.conf = os.path.join(self.dir, 'nova.conf')
        with open(self.conf, 'w') as f:
            f.write('[DEFAULT]\nstate_path = %s\n' % self.dir)

    def run_command(self, argv):
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL)

    def status(self, *argv):
        return self.run_command([STATUS, '--config-file', self.conf] +
                                list(argv))

    def one_check(self, code, *argv):
        return self.run_command(
            [sys.executable, '-c', ONE_CHECK, str(code),
             '--config-file', self.conf, 'upgrade', 'check'] + list(argv))

    def test_json_is_the_only_output(self):
        done = self.status('upgrade', 'check', '--json')
        self.assertEqual(2, done.returncode, done.stderr)
        result = json.loads(done.stdout)
        self.assertEqual('Upgrade Check Results', result['name'])
        checks = {c['check']: c for c in result['checks']}
        self.assertEqual(['Compute object ids', 'Instance index',
                          'Rebuild from cell0'], sorted(checks))
        self.assertEqual(2, checks['Compute object ids']['result'])
        self.assertIn('cannot be read', checks['Compute object ids'][
            'details'])
        self.assertEqual(0, checks['Instance index']['result'])

    def test_table_without_json(self):
        done = self.status('upgrade', 'check')
        self.assertEqual(2, done.returncode, done.stderr)
        self.assertIn('| Check: Compute object ids', done.stdout)
        self.assertIn('| Result: Failure', done.stdout)
        self.assertRaises(ValueError, json.loads, done.stdout)

    def test_exit_codes_and_logs_with_json(self):
        for code in (0, 1, 2):
            done = self.one_check(code, '--json')
            self.assertEqual(code, done.returncode, done.stderr)
            self.assertEqual(
                {'name': 'Upgrade Check Results',
                 'checks': [{'check': 'One', 'result': code,
                             'details': 'code %d' % code}]},
                json.loads(done.stdout))
            self.assertIn('checking now', done.stderr)

    def test_version_is_nova_exts(self):
        want = pbr.version.VersionInfo('nova_ext').release_string()
        nova = pbr.version.VersionInfo('nova').version_string()
        self.assertNotEqual(nova, want)
        for argv in ([STATUS, '--version'],
                     [STATUS, '--config-file', self.conf, '--version']):
            done = self.run_command(argv)
            self.assertEqual(0, done.returncode, done.stderr)
            self.assertEqual(want + '\n', done.stdout)
