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
"""Stopping the benchmark's other processes (real processes, real signals)."""

import os
import subprocess
import sys
import time

import fixtures

from nova_ext.tests.unit import base

from nova_ext_tools.bench import quiet

#: A process that keeps a core busy until it is killed.
_BUSY = 'while True:\n    sum(range(1000))\n'
#: One that takes a lock on the file it is given, then sleeps.
_LOCKER = ('import fcntl, sys, time\n'
           'f = open(sys.argv[1], "r+")\n'
           'fcntl.lockf(f, getattr(fcntl, sys.argv[2]))\n'
           'print("locked", flush=True)\n'
           'time.sleep(120)\n')


class TestQuiet(base.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def _process(self, code, *args, **kwargs):
        proc = subprocess.Popen([sys.executable, '-c', code] + list(args),
                                **kwargs)
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        return proc

    def _running(self, pid, timeout=5.0):
        # SIGCONT is delivered asynchronously, as SIGSTOP is.
        deadline = time.monotonic() + timeout
        while 'T' in quiet.state(pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        return 'T' not in quiet.state(pid)

    def test_stopped_while_entered_then_resumed(self):
        busy = self._process(_BUSY)
        with quiet.Quiet([busy.pid, os.getpid()], stall=60) as pause:
            self.assertTrue(pause.stopped)
            self.assertEqual(1, pause.tries)
            self.assertEqual({'T'}, quiet.state(busy.pid))
            # Never this process itself.
            self.assertEqual([busy.pid], pause.pids)
        self.assertTrue(self._running(busy.pid))

    def _locker(self, kind):
        path = os.path.join(self.tmp, 'index.sqlite')
        with open(path, 'w') as f:
            f.write('x')
        locker = self._process(_LOCKER, path, kind, stdout=subprocess.PIPE)
        self.assertEqual(b'locked\n', locker.stdout.readline())
        return locker

    def test_a_write_lock_holder_is_never_left_stopped(self):
        locker = self._locker('LOCK_EX')
        busy = self._process(_BUSY)
        self.assertEqual({locker.pid}, quiet.locks_held(
            [locker.pid, busy.pid]))
        self.useFixture(fixtures.MonkeyPatch(
            'nova_ext_tools.bench.quiet.TRIES', 3))
        with quiet.Quiet([locker.pid, busy.pid], stall=60) as pause:
            # Tried, found the lock held each time, and left both running.
            self.assertFalse(pause.stopped)
            self.assertEqual(3, pause.tries)
            self.assertTrue(self._running(locker.pid))
            self.assertTrue(self._running(busy.pid))

    def test_a_read_lock_holder_is_stopped(self):
        # As SQLite keeps its shared locks while a connection is open.
        locker = self._locker('LOCK_SH')
        self.assertEqual(set(), quiet.locks_held([locker.pid]))
        with quiet.Quiet([locker.pid], stall=60) as pause:
            self.assertTrue(pause.stopped)
            self.assertEqual({'T'}, quiet.state(locker.pid))

    def test_the_guardian_resumes_them_when_the_watched_process_stalls(self):
        busy = self._process(_BUSY)
        sleeper = self._process('import time\ntime.sleep(120)\n')
        self.useFixture(fixtures.MonkeyPatch(
            'nova_ext_tools.bench.quiet.GUARD_POLL', 0.1))
        with quiet.Quiet([busy.pid], stall=0.5, watch=sleeper.pid) as pause:
            self.assertTrue(pause.stopped)
            # The sleeper uses no CPU: the guardian takes it for hung.
            self.assertTrue(self._running(busy.pid, timeout=10.0))

    def test_the_guardian_resumes_them_when_the_process_dies(self):
        busy = self._process(_BUSY)
        pid = os.fork()
        if pid == 0:
            # A timed child that dies while the others are stopped.
            try:
                pause = quiet.Quiet([busy.pid], stall=60)
                pause.__enter__()
                os._exit(0 if pause.stopped else 3)
            finally:
                os._exit(4)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(0, os.waitstatus_to_exitcode(status))
        # The guardian, orphaned, sees its parent gone (within a poll).
        self.assertTrue(self._running(busy.pid,
                                      timeout=quiet.GUARD_POLL + 5.0))

    def test_nothing_to_stop(self):
        with quiet.Quiet([os.getpid()], stall=60) as pause:
            self.assertFalse(pause.stopped)
            self.assertEqual(0, pause.tries)


class TestSettle(base.TestCase):

    def test_an_idle_process_waits_one_window(self):
        self.assertLess(quiet.settle(window=0.05, limit=10.0), 5.0)

    def test_waits_while_busy_then_stops_waiting(self):
        # CPU seconds read before and after each window: busy for two
        # windows (90% of a core), then idle.
        readings = iter([0.0, 0.009, 0.009, 0.018, 0.018, 0.019])
        self.useFixture(fixtures.MonkeyPatch(
            'nova_ext_tools.bench.isolate.cpu_seconds',
            lambda: next(readings)))
        waited = quiet.settle(busy=0.5, window=0.01, limit=10.0)
        self.assertGreaterEqual(waited, 0.03)
        self.assertRaises(StopIteration, next, readings)

    def test_gives_up_at_the_limit(self):
        cpu = [0.0]

        def busy():
            cpu[0] += 0.01
            return cpu[0]

        self.useFixture(fixtures.MonkeyPatch(
            'nova_ext_tools.bench.isolate.cpu_seconds', busy))
        waited = quiet.settle(busy=0.5, window=0.01, limit=0.05)
        self.assertGreaterEqual(waited, 0.05)
        self.assertLess(waited, 5.0)
