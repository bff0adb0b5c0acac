"""A test process past its deadline: its stacks, then its exit."""

import os
import subprocess
import sys

import testtools

from nova_ext.tests import deadline

HANGS = '''
import threading
from nova_ext.tests import deadline

def blocked_in_a_thread():
    threading.Event().wait()

threading.Thread(target=blocked_in_a_thread, daemon=True).start()
print(deadline.arm(), flush=True)
threading.Event().wait(%s)
'''


class TestDeadline(testtools.TestCase):

    def run_hanging(self, seconds, hang=None):
        env = dict(os.environ)
        env.pop(deadline.ENV, None)
        if seconds is not None:
            env[deadline.ENV] = seconds
        return subprocess.run([sys.executable, '-c', HANGS % hang], env=env,
                              capture_output=True, text=True, timeout=60)

    def test_a_process_past_it_shows_each_thread_then_exits(self):
        done = self.run_hanging('1')
        self.assertEqual(1, done.returncode, done.stderr)
        self.assertEqual('1.0\n', done.stdout)
        self.assertIn('Timeout (0:00:01)!', done.stderr)
        # Both threads, each where it waits.
        self.assertIn('in blocked_in_a_thread', done.stderr)
        self.assertIn('File "<string>", line 10 in <module>', done.stderr)

    def test_without_it_a_process_runs_on(self):
        for unset in (None, ''):
            done = self.run_hanging(unset, hang=3)
            self.assertEqual(0, done.returncode, done.stderr)
            self.assertEqual('None\n', done.stdout)
