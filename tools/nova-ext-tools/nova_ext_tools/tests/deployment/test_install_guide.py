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
"""The install guide's commands and checks, in the real cloud.

doc/source/install/index.rst, "From a stock Nova to every capability"
and "Upgrading nova_ext": the cloud ran each step as its command; here each
check the guide names is made again on the running cloud.
"""

from nova_ext_tools.cloud import nova as cloud_nova
from nova_ext_tools.tests.deployment import base


class TestFromStockNova(base.CloudTestCase):

    def run_command(self, *args):
        done = self.cloud.ext.command(*args, check=False)
        output = done.stdout + done.stderr
        self.assertEqual(0, done.returncode, output)
        return done

    def test_version(self):
        done = self.cloud.ext.command('nova-ext-status', '--version',
                                      check=False)
        self.assertEqual(0, done.returncode, done.stderr)
        self.assertRegex(done.stdout + done.stderr, r'\d+\.\d+')

    def test_upgrade_check_passes(self):
        done = self.run_command('nova-ext-status', 'upgrade', 'check')
        self.assertIn('Instance index', done.stdout)
        self.assertIn('Compute object ids', done.stdout)
        self.assertNotIn('Failure', done.stdout)

    def test_index_status_says_nova_api_uses_the_index(self):
        self.run_command('nova-ext-manage', 'index', 'status')

    def test_index_verify_finds_no_drift(self):
        self.run_command('nova-ext-manage', 'index', 'verify')

    def test_online_data_migrations_finish(self):
        self.run_command('nova-ext-manage', 'db', 'online_data_migrations')

    def test_upgrade_commands_run_again(self):
        # "Both only add to the schemas, and every revision can be run
        # again after a failure."
        self.run_command('nova-ext-manage', 'api_db', 'sync')
        self.run_command('nova-ext-manage', 'index', 'db_sync')

    def test_upgrade_ends_with_a_repair(self):
        # "Once every host runs the new version, run nova-ext-manage index
        # verify --fix": it runs on a live cloud, and leaves no drift.
        self.run_command('nova-ext-manage', 'index', 'verify', '--fix')
        self.run_command('nova-ext-manage', 'index', 'verify')


class TestAttachedLines(base.CloudTestCase):
    """Every service logs the "attached" lines the guide names.

    doc/source/install/index.rst and seams.rst tell operators to look for
    them.
    """

    def assertLogged(self, name, line):
        self.assertIn(line, self.log_of(name),
                      '%s did not log %r' % (name, line))

    def test_nova_api(self):
        for name in ('nova-api',):
            self.assertLogged(name, 'nova_ext attached to nova-api')
            self.assertLogged(name, 'nova_ext notification driver attached')
            self.assertLogged(name, 'nova_ext index change capture attached')

    def test_stock_nova_api_has_no_filter(self):
        self.assertNotIn('nova_ext attached to nova-api',
                         self.log_of('nova-api-stock'))

    def test_conductors(self):
        names = ['nova-conductor'] + [
            'nova-conductor-' + c for c in base.build.layout.CELLS]
        for name in names:
            self.assertLogged(name, 'nova_ext notification driver attached')
            self.assertLogged(name, 'nova_ext index change capture attached')

    def test_scheduler(self):
        self.assertLogged('nova-scheduler', 'nova_ext attached to '
                                            'nova-scheduler')
        self.assertLogged('nova-scheduler',
                          'nova_ext notification driver attached')

    def test_computes(self):
        for cell in base.build.layout.CELLS:
            self.assertLogged(cloud_nova.compute_process(cell),
                              'nova_ext notification driver attached')
