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
"""Benchmark jobs in forked processes (real forks)."""

import collections
import os
import time

import fixtures

from nova_ext.tests.unit import base

from nova_ext_tools.bench import isolate


class TestCall(base.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def test_runs_in_a_child_and_leaves_this_process_alone(self):
        state = {'touched': False}

        def job():
            state['touched'] = True
            return {'pid': os.getpid(), 'values': [1.5, 2]}

        result = isolate.call(job, timeout=60)
        self.assertNotEqual(os.getpid(), result['pid'])
        self.assertEqual([1.5, 2], result['values'])
        self.assertFalse(state['touched'])

    def test_usage_adds_up_the_childs_time(self):
        usage = collections.Counter()
        isolate.call(lambda: time.sleep(0.2), timeout=60, usage=usage)
        isolate.call(lambda: time.sleep(0.2), timeout=60, usage=usage)
        self.assertGreaterEqual(usage['wall'], 0.4)
        # This process only waited.
        self.assertLess(usage['parent_cpu'], usage['wall'])

    def test_large_results_come_back_whole(self):
        # More than a pipe's buffer: the parent must read while the child
        # writes.
        values = list(range(200000))
        self.assertEqual(values, isolate.call(lambda: values, timeout=60))

    def test_the_childs_error_is_raised_with_its_traceback(self):
        def job():
            raise ValueError('no such query')

        error = self.assertRaises(isolate.ChildFailed, isolate.call, job,
                                  timeout=60)
        self.assertIn('ValueError: no such query', str(error))
        self.assertIn('in job', str(error))

    def test_a_child_that_dies_silently_fails(self):
        error = self.assertRaises(isolate.ChildFailed, isolate.call,
                                  lambda: os._exit(3), timeout=60)
        self.assertIn('died', str(error))

    def test_a_child_out_of_time_is_killed_and_reaped(self):
        pid_file = os.path.join(self.tmp, 'pid')

        def job():
            with open(pid_file, 'w') as f:
                f.write(str(os.getpid()))
            time.sleep(60)

        started = time.monotonic()
        error = self.assertRaises(isolate.ChildFailed, isolate.call, job,
                                  timeout=1)
        self.assertLess(time.monotonic() - started, 30)
        self.assertIn('killed', str(error))
        with open(pid_file) as f:
            pid = int(f.read())
        # Reaped: no zombie left under this process.
        self.assertRaises(ChildProcessError, os.waitpid, pid, os.WNOHANG)


class TestStall(base.TestCase):

    def test_heartbeats_keep_a_long_child_alive(self):
        def job():
            for _ in range(8):
                time.sleep(0.2)
                isolate.heartbeat()
            return 'done'

        self.assertEqual('done', isolate.call(job, timeout=60, stall=1))

    def test_a_silent_child_is_killed_long_before_its_timeout(self):
        started = time.monotonic()
        self.assertRaises(isolate.ChildStalled, isolate.call,
                          lambda: time.sleep(60), timeout=60, stall=0.5)
        self.assertLess(time.monotonic() - started, 30)

    def test_a_stalled_child_prints_where_it_waits(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova_ext_tools.bench.isolate.DUMP_WAIT', 0.5))
        err = os.path.join(self.useFixture(fixtures.TempDir()).path, 'err')

        def stuck_in_here():
            # Spinning, not sleeping: under eventlet a sleep is in the hub.
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                pass

        saved = os.dup(2)
        try:
            with open(err, 'wb') as f:
                os.dup2(f.fileno(), 2)
            self.assertRaises(isolate.ChildStalled, isolate.call,
                              stuck_in_here, timeout=60, stall=0.5)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        with open(err) as f:
            dumped = f.read()
        self.assertIn('stuck_in_here', dumped)

    def test_heartbeat_is_harmless_in_the_parent(self):
        isolate.heartbeat()

    def test_a_stalled_child_is_forked_again_once(self):
        flag = os.path.join(self.useFixture(fixtures.TempDir()).path, 'f')

        def stalls_the_first_time():
            if not os.path.exists(flag):
                open(flag, 'w').close()
                time.sleep(60)
            return os.getpid()

        results = isolate.in_processes({'a': stalls_the_first_time}, 1,
                                       timeout=60, stall=0.5)
        self.assertEqual(1, len(results['a']))
        self.assertRaises(isolate.ChildStalled, isolate.in_processes,
                          {'b': lambda: time.sleep(60)}, 1, timeout=60,
                          stall=0.5)


class TestInProcesses(base.TestCase):

    def test_jobs_take_turns_in_a_child_each(self):
        log = os.path.join(self.useFixture(fixtures.TempDir()).path, 'log')

        def job(name):
            with open(log, 'a') as f:
                f.write(name)
            return os.getpid()

        results = isolate.in_processes(
            {'a': lambda: job('a'), 'b': lambda: job('b')}, 3, timeout=60)
        with open(log) as f:
            self.assertEqual('abbaab', f.read())
        pids = results['a'] + results['b']
        self.assertEqual(6, len(set(pids)))
        self.assertNotIn(os.getpid(), pids)
