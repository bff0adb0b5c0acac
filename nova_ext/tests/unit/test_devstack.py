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
"""The DevStack plugin (devstack/), run by bash against sample files.

Each test runs the plugin's phases in a bash subprocess the way stack.sh
and unstack.sh source it, against copies of ``devstack_samples/`` (what
DevStack's lib/nova writes to nova.conf and to the per-cell conductor
files) and of the api-paste.ini of the installed Nova, in a temporary
directory.

The ini functions (iniset, iniget, ...) are DevStack's own
``inc/ini-config``: that of a DevStack checkout found at ``$DEVSTACK_DIR``
or ``/opt/stack/devstack``, else the copy in ``devstack_samples/ini-config``
(from openstack/devstack at commit 493835a6, Apache License 2.0; the file
says it has no external dependencies).
The few other DevStack functions the plugin calls are stand-ins that
record their calls (``DEVSTACK_STANDINS``).

``NOVA_EXT_TEST_DEVSTACK_PLUGIN_DIR`` points the tests at another copy of
the plugin (a directory with plugin.sh, settings and lib/nova_ext), for
instance an older one, to see the tests fail against it.
"""

import os
import shutil
import subprocess
import sys

import fixtures
import yaml

from nova_ext.tests.unit import base

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
SAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       'devstack_samples')
PLUGIN_DIR = os.environ.get('NOVA_EXT_TEST_DEVSTACK_PLUGIN_DIR') or \
    os.path.join(ROOT, 'devstack')

NOTIFICATION_URL = 'rabbit://stackrabbit:fake-secret@10.0.0.5:5672/'
CELL_URL = 'rabbit://stackrabbit:fake-secret@10.0.0.5:5672/nova_cell%d'


def devstack_ini_config():
    """DevStack's inc/ini-config: a checkout's, else the copy here."""
    for top in (os.environ.get('DEVSTACK_DIR'), '/opt/stack/devstack'):
        if top:
            path = os.path.join(top, 'inc', 'ini-config')
            if os.path.isfile(path):
                return path
    return os.path.join(SAMPLES, 'ini-config')


# Stand-ins for the DevStack functions the plugin calls that are not ini
# functions. Those that matter record their calls in $CALLS, one line each.
DEVSTACK_STANDINS = r'''
function _record {
    echo "$*" >> "$CALLS"
}
function echo_summary {
    echo "summary: $*"
}
function die {
    local line=$1
    shift
    _record "die $*"
    echo "die at $line: $*" >&2
    exit 1
}
function warn {
    local line=$1
    shift
    _record "warn $*"
}
function trueorfalse {
    local default=$1
    local value=${!2:-}
    case "$value" in
        1|yes|Yes|YES|true|True|TRUE|on|On|ON) echo True ;;
        0|no|No|NO|false|False|FALSE|off|Off|OFF) echo False ;;
        *) echo "$default" ;;
    esac
}
function define_plugin {
    :
}
function is_service_enabled {
    local service
    for service in "$@"; do
        if [[ ",$ENABLED_SERVICES," == *",$service,"* ]]; then
            return 0
        fi
    done
    return 1
}
function enable_service {
    local service
    for service in "$@"; do
        if [[ ",$DISABLED_SERVICES," == *",$service,"* ]]; then
            continue
        fi
        if ! is_service_enabled "$service"; then
            ENABLED_SERVICES+=",$service"
        fi
    done
}
function conductor_conf {
    echo "$NOVA_CONF_DIR/nova_cell$1.conf"
}
function run_process {
    _record "run_process $1 $2"
}
function stop_process {
    _record "stop_process $1"
}
function wait_for_service {
    _record "wait_for_service $*"
}
function fake_systemctl {
    _record "systemctl $*"
}
SYSTEMCTL=fake_systemctl

# stack.sh's "async_runfunc configure_neutron_nova", started before the
# post-config phase: like its iniset calls (sed -i: read, rewrite, rename),
# the job read the files when it started and writes its own version of
# them when it finishes, which async_wait waits for. An edit made to a file
# in between is lost.
ASYNC_FILES="$NOVA_CONF $(conductor_conf 1) $(conductor_conf 2)"
function async_runfunc {
    local name=$1
    mkdir -p "$NOVA_EXT_TEST_DIR/async/$name"
    local file
    for file in $ASYNC_FILES; do
        cp "$file" "$NOVA_EXT_TEST_DIR/async/$name/$(basename "$file")"
    done
}
function async_wait {
    local name
    for name in "$@"; do
        local dir="$NOVA_EXT_TEST_DIR/async/$name"
        if [[ ! -d "$dir" ]]; then
            _record "async_wait $name: not running"
            continue
        fi
        _record "async_wait $name: collected"
        local file copy
        for file in $ASYNC_FILES; do
            copy="$dir/$(basename "$file")"
            iniset "$copy" neutron auth_type password
            iniset "$copy" neutron region_name RegionOne
            cp "$copy" "$file.async"
            mv "$file.async" "$file"
        done
        rm -rf "$dir"
    done
}
'''

# Emulates the parts of stack.sh / unstack.sh around the plugin's phases:
# settings sourced once, then each phase in order.
HARNESS = r'''
set -o errexit
set -o nounset
set -o pipefail
declare -A PROJECT_VENV=()
source "$NOVA_EXT_TEST_INI_CONFIG"
source "$NOVA_EXT_TEST_DIR/standins.sh"
source "$NOVA_EXT_TEST_PLUGIN_DIR/settings"
async_runfunc configure_neutron_nova
for phase in "$@"; do
    case "$phase" in
        post-config)
            source "$NOVA_EXT_TEST_PLUGIN_DIR/plugin.sh" stack post-config
            # stack.sh: merge_config_group local.conf post-config, then:
            async_wait configure_neutron_nova
            ;;
        extra)
            source "$NOVA_EXT_TEST_PLUGIN_DIR/plugin.sh" stack extra
            ;;
        unstack)
            source "$NOVA_EXT_TEST_PLUGIN_DIR/plugin.sh" unstack
            ;;
    esac
    echo "phase $phase" >> "$CALLS"
done
echo "enabled $ENABLED_SERVICES" >> "$CALLS"
'''

# Records how it was run (one line in $CALLS) and succeeds: the stand-in
# of nova_ext's commands in NOVA_BIN_DIR.
COMMAND_STANDIN = '''#!/bin/bash
echo "$0 $*" >> "$CALLS"
'''

# $PYTHON: records its arguments, then runs the tests' python (which has
# nova_ext, for python -m nova_ext.api.paste_config).
PYTHON_STANDIN = '''#!/bin/bash
echo "$0 $*" >> "$CALLS"
exec "$NOVA_EXT_TEST_PYTHON" "$@"
'''

ENABLED_SERVICES = ','.join([
    'rabbit', 'mysql', 'key', 'placement-api', 'n-api', 'n-sch', 'n-cond',
    'n-super-cond', 'n-cond-cell1', 'n-cond-cell2', 'n-cpu'])


def read_ini(path):
    """[(section, option, value)] of an ini file, in file order."""
    entries = []
    section = None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            if line.startswith('['):
                section = line.strip('[]')
            elif '=' in line:
                option, value = line.split('=', 1)
                entries.append((section, option.strip(), value.strip()))
    return entries


def values(path, section, option):
    return [v for s, o, v in read_ini(path) if (s, o) == (section, option)]


class DevStackPluginTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.etc = os.path.join(self.tmp, 'etc', 'nova')
        # GLOBAL_VENV=False: $PYTHON is the system python, in /usr/bin, and
        # pip puts the commands in /usr/local/bin (NOVA_BIN_DIR).
        self.usr_bin = os.path.join(self.tmp, 'usr', 'bin')
        self.bin_dir = os.path.join(self.tmp, 'usr', 'local', 'bin')
        for d in (self.etc, self.usr_bin, self.bin_dir):
            os.makedirs(d)
        for name in ('nova.conf', 'nova_cell1.conf', 'nova_cell2.conf'):
            shutil.copy(os.path.join(SAMPLES, name), self.etc)
        shutil.copy(self._nova_api_paste_ini(),
                    os.path.join(self.etc, 'api-paste.ini'))
        self._script(os.path.join(self.usr_bin, 'python3'), PYTHON_STANDIN)
        for name in ('nova-ext-manage', 'nova-ext-indexer',
                     'nova-ext-status-watcher'):
            self._script(os.path.join(self.bin_dir, name), COMMAND_STANDIN)

        self.ini_config = devstack_ini_config()
        with open(os.path.join(self.tmp, 'standins.sh'), 'w') as f:
            f.write(DEVSTACK_STANDINS)
        self.harness = os.path.join(self.tmp, 'harness.sh')
        with open(self.harness, 'w') as f:
            f.write(HARNESS)
        self.calls_file = os.path.join(self.tmp, 'calls')

    @staticmethod
    def _nova_api_paste_ini():
        # Imported here: it loads Nova's configuration options.
        from nova_ext.tests.functional import fixtures as func_fixtures
        return func_fixtures.nova_api_paste_ini()

    @staticmethod
    def _script(path, text):
        with open(path, 'w') as f:
            f.write(text)
        os.chmod(path, 0o755)

    def etc_file(self, name='nova.conf'):
        return os.path.join(self.etc, name)

    def run_plugin(self, *phases, check=True, **env):
        """Run the plugin's phases; returns the recorded calls."""
        environ = {
            'PATH': os.environ.get('PATH', '/usr/bin:/bin'),
            'HOME': self.tmp,
            'NOVA_EXT_TEST_DIR': self.tmp,
            'NOVA_EXT_TEST_PYTHON': sys.executable,
            'NOVA_EXT_TEST_INI_CONFIG': self.ini_config,
            'NOVA_EXT_TEST_PLUGIN_DIR': PLUGIN_DIR,
            'CALLS': self.calls_file,
            'DEST': os.path.join(self.tmp, 'opt', 'stack'),
            'DATA_DIR': os.path.join(self.tmp, 'opt', 'stack', 'data'),
            'GIT_BASE': 'https://opendev.org',
            'ENABLED_SERVICES': ENABLED_SERVICES,
            'DISABLED_SERVICES': '',
            'GLOBAL_VENV': 'False',
            'DEVSTACK_VENV': os.path.join(self.tmp, 'venv'),
            'PYTHON': os.path.join(self.usr_bin, 'python3'),
            'NOVA_BIN_DIR': self.bin_dir,
            'NOVA_CONF_DIR': self.etc,
            'NOVA_CONF': self.etc_file(),
            'NOVA_CPU_CONF': self.etc_file('nova-cpu.conf'),
            'NOVA_API_PASTE_INI': self.etc_file('api-paste.ini'),
            'NOVA_NUM_CELLS': '2',
            'CELLSV2_SETUP': 'superconductor',
            'NOVA_SERVICE_PROTOCOL': 'http',
            'SERVICE_HOST': '127.0.0.1',
            'SERVICE_TIMEOUT': '60',
            'NOVA_EXT_VERIFY': 'False',
        }
        environ.update(env)
        proc = subprocess.run(
            ['bash', self.harness] + list(phases), env=environ,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            universal_newlines=True, timeout=120)
        calls = []
        if os.path.exists(self.calls_file):
            with open(self.calls_file) as f:
                calls = f.read().splitlines()
        if check:
            self.assertEqual(
                0, proc.returncode,
                'the plugin failed; calls: %s\noutput:\n%s' % (
                    calls, proc.stdout[-6000:]))
        self.output = proc.stdout
        return calls

    def _index(self, calls, prefix):
        for i, call in enumerate(calls):
            if call.startswith(prefix):
                return i
        self.fail('no call starting with %r in %s' % (prefix, calls))

    # 1. GLOBAL_VENV=False: nova_ext's commands are in NOVA_BIN_DIR.

    def test_non_venv_commands_are_taken_from_nova_bin_dir(self):
        calls = self.run_plugin(
            'post-config', 'extra',
            NOVA_EXT_INSTANCE_LIST_DRIVER='index',
            NOVA_EXT_TRAIT_CALLBACKS='compute-status')
        manage = os.path.join(self.bin_dir, 'nova-ext-manage')
        conf = '--config-file %s' % self.etc_file()
        self.assertIn('%s %s api_db sync' % (manage, conf), calls)
        self.assertIn('%s %s index db_sync' % (manage, conf), calls)
        self.assertIn('%s %s index sync' % (manage, conf), calls)
        self.assertIn('run_process n-ext-idx %s %s' % (
            os.path.join(self.bin_dir, 'nova-ext-indexer'), conf), calls)
        self.assertIn('run_process n-ext-watch %s %s' % (
            os.path.join(self.bin_dir, 'nova-ext-status-watcher'), conf),
            calls)
        # Nothing is looked for next to $PYTHON but python itself.
        for call in calls:
            if call.startswith(self.usr_bin):
                self.assertTrue(call.startswith(
                    os.path.join(self.usr_bin, 'python3 ')), call)
        self.assertFalse([c for c in calls if c.startswith('die')], calls)

    def test_missing_command_names_nova_bin_dir(self):
        os.unlink(os.path.join(self.bin_dir, 'nova-ext-manage'))
        calls = self.run_plugin('post-config', check=False)
        dies = [c for c in calls if c.startswith('die')]
        self.assertEqual(1, len(dies), calls)
        self.assertIn(os.path.join(self.bin_dir, 'nova-ext-manage'), dies[0])

    # 2. The edits wait for stack.sh's background configure_neutron_nova.

    def test_edits_happen_after_async_configure_neutron_nova(self):
        calls = self.run_plugin('post-config')
        waited = self._index(calls, 'async_wait configure_neutron_nova')
        self.assertEqual('async_wait configure_neutron_nova: collected',
                         calls[waited])
        # The plugin waited (stack.sh's own later wait finds nothing) ...
        self.assertLess(waited, self._index(calls, 'phase post-config'))
        self.assertIn('async_wait configure_neutron_nova: not running',
                      calls)
        # ... before its first command and edit, so that neither the job's
        # lines nor the plugin's are lost.
        self.assertLess(waited, self._index(calls, self.usr_bin))
        for name in ('nova.conf', 'nova_cell1.conf', 'nova_cell2.conf'):
            conf = self.etc_file(name)
            self.assertEqual(['password'],
                             values(conf, 'neutron', 'auth_type'), name)
            self.assertEqual(
                ['messagingv2', 'nova_ext'],
                values(conf, 'oslo_messaging_notifications', 'driver'), name)
            self.assertEqual(['both'], values(conf, 'notifications',
                                              'notification_format'), name)

    # 3. The cell conductors' notifications go to the top-level bus.

    def test_cell_conductor_files_get_the_notification_transport(self):
        self.run_plugin('post-config')
        for cell in (1, 2):
            conf = self.etc_file('nova_cell%d.conf' % cell)
            self.assertEqual(
                [NOTIFICATION_URL],
                values(conf, 'oslo_messaging_notifications', 'transport_url'))
            self.assertEqual(
                ['messagingv2', 'nova_ext'],
                values(conf, 'oslo_messaging_notifications', 'driver'))
            # Their RPC stays on the cell's vhost.
            self.assertEqual([CELL_URL % cell],
                             values(conf, 'DEFAULT', 'transport_url'))
        self.assertEqual(
            [NOTIFICATION_URL],
            values(self.etc_file(), 'oslo_messaging_notifications',
                   'transport_url'))

    def test_notification_transport_is_idempotent_and_kept(self):
        cell2 = self.etc_file('nova_cell2.conf')
        with open(cell2, 'a') as f:
            f.write('\n[oslo_messaging_notifications]\n'
                    'transport_url = rabbit://operator@10.0.0.9:5672/\n')
        self.run_plugin('post-config')
        first = {name: open(self.etc_file(name)).read() for name in
                 ('nova.conf', 'nova_cell1.conf', 'nova_cell2.conf')}
        self.run_plugin('post-config')
        for name, text in first.items():
            self.assertEqual(text, open(self.etc_file(name)).read(), name)
        self.assertEqual(
            [NOTIFICATION_URL],
            values(self.etc_file('nova_cell1.conf'),
                   'oslo_messaging_notifications', 'transport_url'))
        self.assertEqual(
            ['rabbit://operator@10.0.0.9:5672/'],
            values(cell2, 'oslo_messaging_notifications', 'transport_url'))

    # 4. Change capture in nova-api and every conductor with the index.

    def test_index_driver_turns_capture_on_for_api_and_conductors(self):
        self.run_plugin('post-config', NOVA_EXT_INSTANCE_LIST_DRIVER='index')
        # nova-api and the super conductor read nova.conf.
        for name in ('nova.conf', 'nova_cell1.conf', 'nova_cell2.conf'):
            self.assertEqual(
                ['True'], values(self.etc_file(name), 'nova_ext_index',
                                 'capture'), name)

    def test_capture_off_when_asked_or_without_the_index(self):
        self.run_plugin('post-config')
        for name in ('nova.conf', 'nova_cell1.conf', 'nova_cell2.conf'):
            self.assertEqual([], values(self.etc_file(name),
                                        'nova_ext_index', 'capture'), name)
        self.run_plugin('post-config', NOVA_EXT_INSTANCE_LIST_DRIVER='index',
                        NOVA_EXT_INDEX_CAPTURE='False')
        for name in ('nova.conf', 'nova_cell1.conf', 'nova_cell2.conf'):
            self.assertEqual(
                ['False'], values(self.etc_file(name), 'nova_ext_index',
                                  'capture'), name)

    def test_fast_render_options_with_the_index(self):
        feed = 'rabbit://stackrabbit:secret@127.0.0.1:5672/'
        self.run_plugin('post-config', NOVA_EXT_INSTANCE_LIST_DRIVER='index',
                        NOVA_EXT_FAST_RENDER='True',
                        NOVA_EXT_RENDER_CACHE_SIZE='100000',
                        NOVA_EXT_PAGE_CACHE_SIZE='16',
                        NOVA_EXT_DETAIL_BODY_CACHE_SIZE='8',
                        NOVA_EXT_GC_FREEZE='True',
                        NOVA_EXT_NEUTRON_FEED_URL=feed)
        conf = self.etc_file()
        self.assertEqual(['True'], values(conf, 'nova_ext_instance_list',
                                          'fast_render'))
        self.assertEqual(['100000'], values(conf, 'nova_ext_instance_list',
                                            'render_cache_size'))
        self.assertEqual(['16'], values(conf, 'nova_ext_instance_list',
                                        'page_cache_size'))
        self.assertEqual(['8'], values(conf, 'nova_ext_instance_list',
                                       'detail_body_cache_size'))
        self.assertEqual(['True'], values(conf, 'nova_ext_instance_list',
                                          'gc_freeze'))
        self.assertEqual([feed], values(conf, 'nova_ext_instance_list',
                                        'neutron_feed_url'))

    def test_no_fast_render_unless_asked_with_the_index(self):
        for env in ({'NOVA_EXT_INSTANCE_LIST_DRIVER': 'index',
                     'NOVA_EXT_RENDER_CACHE_SIZE': '100000',
                     'NOVA_EXT_PAGE_CACHE_SIZE': '16',
                     'NOVA_EXT_DETAIL_BODY_CACHE_SIZE': '8',
                     'NOVA_EXT_GC_FREEZE': 'True'},
                    {'NOVA_EXT_FAST_RENDER': 'True'}):
            self.run_plugin('post-config', **env)
            for option in ('fast_render', 'render_cache_size',
                           'page_cache_size', 'detail_body_cache_size',
                           'gc_freeze', 'neutron_feed_url'):
                self.assertEqual([], values(self.etc_file(),
                                            'nova_ext_instance_list',
                                            option), (env, option))

    # 5. nova-ext-indexer and nova-ext-status-watcher as DevStack services.

    def test_services_started_with_run_process_when_enabled(self):
        calls = self.run_plugin(
            'post-config', 'extra',
            NOVA_EXT_INSTANCE_LIST_DRIVER='index',
            NOVA_EXT_TRAIT_CALLBACKS='compute-status')
        enabled = calls[-1].split()[1].split(',')
        self.assertIn('n-ext-idx', enabled)
        self.assertIn('n-ext-watch', enabled)
        started = [c.split()[1] for c in calls
                   if c.startswith('run_process')]
        self.assertEqual(['n-ext-idx', 'n-ext-watch'], started)
        # The indexer starts once the index schema exists.
        self.assertLess(self._index(calls, os.path.join(
            self.bin_dir, 'nova-ext-manage') + ' --config-file %s index '
            'db_sync' % self.etc_file()),
            self._index(calls, 'run_process n-ext-idx'))
        self.assertLess(self._index(calls, 'phase post-config'),
                        self._index(calls, 'run_process'))

    def test_services_off_without_their_capability_or_when_disabled(self):
        calls = self.run_plugin('post-config', 'extra')
        self.assertFalse([c for c in calls if c.startswith('run_process')])
        self.assertNotIn('n-ext', calls[-1])
        os.unlink(self.calls_file)
        calls = self.run_plugin(
            'post-config', 'extra',
            NOVA_EXT_INSTANCE_LIST_DRIVER='index',
            NOVA_EXT_TRAIT_CALLBACKS='compute-status',
            DISABLED_SERVICES='n-ext-watch')
        started = [c.split()[1] for c in calls
                   if c.startswith('run_process')]
        self.assertEqual(['n-ext-idx'], started)

    def test_services_stopped_at_unstack(self):
        calls = self.run_plugin(
            'unstack',
            NOVA_EXT_INSTANCE_LIST_DRIVER='index',
            NOVA_EXT_TRAIT_CALLBACKS='compute-status')
        self.assertIn('stop_process n-ext-idx', calls)
        self.assertIn('stop_process n-ext-watch', calls)

    # Which ini functions ran.

    def test_ini_config_is_devstacks(self):
        with open(self.ini_config) as f:
            self.assertIn('# **inc/ini-config** - Configuration/INI '
                          'functions', f.read())
        self.run_plugin('post-config')
        self.assertEqual(
            ['messagingv2', 'nova_ext'],
            values(self.etc_file(), 'oslo_messaging_notifications', 'driver'))


class CIConfigTest(base.TestCase):
    """bindep.txt and .zuul.yaml."""

    @staticmethod
    def _packages(path):
        """{package: [profile words]} of a package list."""
        found = {}
        with open(path) as f:
            for line in f:
                line = line.split('#', 1)[0].strip()
                if not line:
                    continue
                name, _, rest = line.partition(' ')
                found[name] = rest.strip(' []').split()
        return found

    def test_bindep_lists_the_packages_of_tools_test_packages(self):
        bindep = self._packages(os.path.join(ROOT, 'bindep.txt'))
        tools = self._packages(os.path.join(ROOT, 'tools',
                                            'test-packages.txt'))
        self.assertEqual(sorted(tools), sorted(bindep))
        for name, profiles in bindep.items():
            self.assertIn('test', profiles, name)

    def test_zuul_unit_job_runs_the_py3_env(self):
        with open(os.path.join(ROOT, '.zuul.yaml')) as f:
            config = yaml.safe_load(f)
        jobs = {e['job']['name']: e['job'] for e in config if 'job' in e}
        project = [e['project'] for e in config if 'project' in e][0]
        self.assertEqual('py3', jobs['nova-ext-tox-py311']['vars'][
            'tox_envlist'])
        for pipeline in ('check', 'gate'):
            names = [j if isinstance(j, str) else list(j)[0]
                     for j in project[pipeline]['jobs']]
            self.assertIn('nova-ext-tox-py311', names)
            self.assertNotIn('openstack-tox-py311', names)
            self.assertIn('nova-ext-tox-functional', names)

    def test_zuul_capabilities_job_runs_the_plugins_services(self):
        with open(os.path.join(ROOT, '.zuul.yaml')) as f:
            config = yaml.safe_load(f)
        jobs = {e['job']['name']: e['job'] for e in config if 'job' in e}
        job = jobs['nova-ext-tempest-capabilities']
        services = job['vars']['devstack_services']
        with open(os.path.join(ROOT, 'devstack', 'settings')) as f:
            settings = f.read()
        for service in ('n-ext-idx', 'n-ext-watch'):
            self.assertTrue(services[service])
            self.assertIn('enable_service %s' % service, settings)
        localrc = job['vars']['devstack_localrc']
        self.assertEqual('index', localrc['NOVA_EXT_INSTANCE_LIST_DRIVER'])
        self.assertEqual(
            {'compute-disabled', 'compute-down'},
            set(localrc['NOVA_EXT_REQUEST_FILTERS'].split(',')))
        self.assertTrue(localrc['NOVA_EXT_CELL0_REBUILD'])
