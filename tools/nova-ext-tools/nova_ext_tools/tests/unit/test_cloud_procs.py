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
"""The real cloud's process table and config files (real processes)."""

import os
import sys

import fixtures

from nova_ext.tests.unit import base

from nova_ext_tools.cloud import procs
from nova_ext_tools.cloud import services

#: A process that starts a child in its own group, then sleeps, ignoring
#: SIGTERM as a slow worker would.
_PARENT = ('import signal, subprocess, sys, time\n'
           'signal.signal(signal.SIGTERM, signal.SIG_IGN)\n'
           'child = subprocess.Popen([sys.executable, "-c", '
           '"import signal, time; '
           'signal.signal(signal.SIGTERM, signal.SIG_IGN); '
           'time.sleep(300)"])\n'
           'print(child.pid, flush=True)\n'
           'time.sleep(300)\n')


#: A leader that, told to stop, ends its child its own way (SIGUSR1); the
#: child says whether it got SIGTERM itself.
_LEADER = ('import os, signal, subprocess, sys, time\n'
           'child = subprocess.Popen([sys.executable, "-c", '
           '"import os, signal, sys, time\\n'
           'def term(*a):\\n'
           '    os.write(1, b\'child TERM\\\\n\')\\n'
           'signal.signal(signal.SIGTERM, term)\\n'
           'signal.signal(signal.SIGUSR1, lambda *a: sys.exit(0))\\n'
           'os.write(1, b\'ready\\\\n\')\\n'
           'time.sleep(300)\\n"])\n'
           'def term(*a):\n'
           '    os.write(1, b"leader TERM\\n")\n'
           '    time.sleep(0.5)\n'
           '    child.send_signal(signal.SIGUSR1)\n'
           '    child.wait()\n'
           '    sys.exit(0)\n'
           'signal.signal(signal.SIGTERM, term)\n'
           'time.sleep(300)\n')


#: A process that, told to stop, leaves its mark and waits up to 10 s for
#: the other one's: it says whether that came.
_PEER = ('import os, signal, sys, time\n'
         'mine, theirs = sys.argv[1:]\n'
         'def term(*a):\n'
         '    open(mine, "w").close()\n'
         '    deadline = time.monotonic() + 10\n'
         '    while not os.path.exists(theirs) and '
         'time.monotonic() < deadline:\n'
         '        time.sleep(0.05)\n'
         '    os.write(1, b"together\\n" if os.path.exists(theirs) '
         'else b"alone\\n")\n'
         '    sys.exit(0)\n'
         'signal.signal(signal.SIGTERM, term)\n'
         'os.write(1, b"ready\\n")\n'
         'time.sleep(300)\n')


class TestProcesses(base.TestCase):

    def setUp(self):
        super().setUp()
        self.ps = procs.Processes(self.useFixture(fixtures.TempDir()).path)
        self.addCleanup(self.ps.stop_all)

    def test_stop_ends_the_whole_group(self):
        self.ps.start('parent', [sys.executable, '-c', _PARENT])
        procs.wait_for('the child', lambda: open(
            self.ps.log('parent')).read().strip(), 30)
        child = int(open(self.ps.log('parent')).read().split()[0])
        self.assertTrue(self.ps.running('parent'))
        self.assertIn(child, procs.group_members(self.ps.pid('parent')))
        self.ps.stop('parent', timeout=1)
        self.assertFalse(self.ps.running('parent'))
        self.assertFalse(os.path.exists('/proc/%d/stat' % child)
                         and open('/proc/%d/stat' % child).read().split(
                             ')')[-1].split()[0] != 'Z')
        self.assertEqual([], self.ps.names())

    def test_cpu_seconds_count_the_whole_group(self):
        # The parent sleeps; its child spins until it has used 0.3 s of
        # CPU, then sleeps.
        spin = ('import subprocess, sys, time\n'
                'child = subprocess.Popen([sys.executable, "-c", '
                '"import time\\n'
                'while time.process_time() < 0.3: pass\\n'
                'print(1, flush=True)\\n'
                'time.sleep(300)"])\n'
                'time.sleep(300)\n')
        self.ps.start('spinner', [sys.executable, '-c', spin])
        self.ps.start('sleeper', [sys.executable, '-c',
                                  'import time; time.sleep(300)'])
        procs.wait_for('the child', lambda: open(
            self.ps.log('spinner')).read().strip(), 30)
        used = self.ps.cpu_seconds(['spinner', 'sleeper', 'never'])
        self.assertEqual(['never', 'sleeper', 'spinner'], sorted(used))
        self.assertGreaterEqual(used['spinner'], 0.3)
        self.assertLess(used['sleeper'], 0.3)
        self.assertEqual(0, used['never'])

    def _stopped(self, **kwargs):
        self.ps.start('leader', [sys.executable, '-c', _LEADER], **kwargs)
        procs.wait_for('the child', lambda: 'ready' in open(
            self.ps.log('leader')).read(), 30)
        self.ps.stop('leader', timeout=10)
        self.assertFalse(self.ps.running('leader'))
        self.assertEqual([], self.ps.names())
        self.assertEqual([], os.listdir(self.ps.piddir))
        return open(self.ps.log('leader')).read()

    def test_leader_stop_signals_the_leader_alone(self):
        said = self._stopped(leader_stop=True)
        self.assertIn('leader TERM', said)
        self.assertNotIn('child TERM', said)

    def test_stop_signals_the_group(self):
        said = self._stopped()
        self.assertIn('leader TERM', said)
        self.assertIn('child TERM', said)

    def test_stop_many_tells_each_before_waiting_for_any(self):
        marks = self.useFixture(fixtures.TempDir()).path
        a, b = (os.path.join(marks, n) for n in 'ab')
        self.ps.start('a', [sys.executable, '-c', _PEER, a, b])
        self.ps.start('b', [sys.executable, '-c', _PEER, b, a])
        for name in ('a', 'b'):
            procs.wait_for(name, lambda: 'ready' in open(
                self.ps.log(name)).read(), 30)
        self.ps.stop_many(['a', 'b'], timeout=30)
        self.assertEqual([], self.ps.names())
        for name in ('a', 'b'):
            self.assertIn('together', open(self.ps.log(name)).read())

    def test_start_refuses_a_running_name(self):
        self.ps.start('sleeper', [sys.executable, '-c',
                                  'import time; time.sleep(300)'])
        self.assertRaises(procs.CloudError, self.ps.start, 'sleeper',
                          ['true'])

    def test_check_reports_an_exited_process_with_its_log(self):
        self.ps.start('dies', [sys.executable, '-c',
                               'print("bad config"); raise SystemExit(3)'])
        procs.wait_for('exit', lambda: not self.ps.running('dies'), 30)
        e = self.assertRaises(procs.CloudError, self.ps.check, 'dies')
        self.assertIn('bad config', str(e))


class TestWriteIni(base.TestCase):

    def setUp(self):
        super().setUp()
        self.path = os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'etc', 'nova.conf')

    def test_lists_are_repeated_options_and_others_are_kept(self):
        services.write_ini(self.path, {
            'DEFAULT': {'debug': 'false'},
            'oslo_messaging_notifications': {'driver': 'messagingv2'},
            'api': {'auth_strategy': 'keystone'}})
        services.write_ini(self.path, {'oslo_messaging_notifications': {
            'driver': ['messagingv2', 'nova_ext']}})
        with open(self.path) as f:
            text = f.read()
        self.assertIn('[oslo_messaging_notifications]\n'
                      'driver = messagingv2\ndriver = nova_ext\n', text)
        self.assertIn('[api]\nauth_strategy = keystone\n', text)
        self.assertIn('[DEFAULT]\ndebug = false\n', text)

    def test_oslo_config_reads_the_repeated_option_as_a_list(self):
        from oslo_config import cfg
        services.write_ini(self.path, {'filter_scheduler': {
            'available_filters': ['a.all_filters', 'b.attach']}})
        conf = cfg.ConfigOpts()
        conf.register_opt(cfg.MultiStrOpt('available_filters'),
                          group='filter_scheduler')
        conf([], default_config_files=[self.path])
        self.assertEqual(['a.all_filters', 'b.attach'],
                         conf.filter_scheduler.available_filters)
