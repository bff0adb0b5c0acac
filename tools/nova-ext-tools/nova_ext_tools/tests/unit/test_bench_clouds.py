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
"""Benchmark clouds in processes of their own (real forks)."""

import io
import os

from nova_ext.tests.unit import base

from nova_ext_tools.bench import clouds


class TestTurns(base.TestCase):

    def test_every_cloud_runs_each_job_before_the_next_job(self):
        self.assertEqual(
            [(2, 'a'), (32, 'a'), (2, 'b'), (32, 'b'),
             (32, 'b'), (2, 'b'), (32, 'a'), (2, 'a'),
             (2, 'a'), (32, 'a'), (2, 'b'), (32, 'b')],
            clouds.turns([2, 32], ('a', 'b'), 3))

    def test_one_cloud_alone_takes_every_turn(self):
        self.assertEqual([(8, 'a'), (8, 'a')], clouds.turns([8], ('a',), 2))


class TestLinePrefixed(base.TestCase):

    def test_whole_lines_only_each_after_the_prefix(self):
        out = io.StringIO()
        stream = clouds.LinePrefixed('[2 cells] ', out)
        stream.write('[1] building ... ')
        self.assertEqual('', out.getvalue())
        stream.write('(1.0 s)\n[2] syncing')
        self.assertEqual('[2 cells] [1] building ... (1.0 s)\n',
                         out.getvalue())
        stream.write(' ... (2.0 s)\n')
        self.assertEqual('[2 cells] [1] building ... (1.0 s)\n'
                         '[2 cells] [2] syncing ... (2.0 s)\n',
                         out.getvalue())


def _build(serve, errors=()):
    state = {'n': 0}

    def count(by):
        state['n'] += by
        return state['n']

    def fail():
        raise ValueError('no such thing')

    serve({'pid': os.getpid, 'count': count, 'fail': fail,
           'die': lambda: os._exit(3)})
    return list(errors)


class TestCloudProcess(base.TestCase):

    def _start(self, build=_build):
        proc = clouds.CloudProcess('test cloud', build)
        self.addCleanup(proc.stop)
        return proc

    def test_commands_run_in_one_process_of_its_own_keeping_state(self):
        proc = self._start()
        self.assertTrue(proc.ready())
        pid = proc.ask('pid')
        self.assertNotEqual(os.getpid(), pid)
        self.assertEqual(pid, proc.pid)
        self.assertEqual(2, proc.ask('count', 2))
        self.assertEqual(5, proc.ask('count', 3))
        self.assertEqual([], proc.stop())
        self.assertGreater(proc.info['peak_rss_mib'], 0)

    def test_a_failed_command_raises_with_its_traceback(self):
        proc = self._start()
        self.assertTrue(proc.ready())
        error = self.assertRaises(clouds.CloudFailed, proc.ask, 'fail')
        self.assertIn('ValueError: no such thing', str(error))
        self.assertIn('test cloud, fail', str(error))
        # The process goes on serving.
        self.assertEqual(1, proc.ask('count', 1))

    def test_a_dead_process_is_reported(self):
        proc = self._start()
        self.assertTrue(proc.ready())
        error = self.assertRaises(clouds.CloudFailed, proc.ask, 'die')
        self.assertIn('died', str(error))
        self.assertEqual(['test cloud: the cloud process died'],
                         proc.stop())

    def test_a_cloud_that_cannot_be_built_is_not_ready(self):
        def build(serve):
            raise RuntimeError('no cells')

        proc = self._start(build)
        self.assertFalse(proc.ready())
        errors = proc.stop()
        self.assertEqual(1, len(errors))
        self.assertIn('RuntimeError: no cells', errors[0])

    def test_errors_of_the_teardown_come_back_on_stop(self):
        proc = self._start(
            lambda serve: _build(serve, errors=['cleanup failed']))
        self.assertTrue(proc.ready())
        self.assertEqual(['cleanup failed'], proc.stop())
        # Stopping again changes nothing.
        self.assertEqual(['cleanup failed'], proc.stop())

    def test_a_process_dead_before_its_cloud_was_built_is_not_ready(self):
        proc = self._start(lambda serve: os._exit(4))
        self.assertFalse(proc.ready())
        self.assertEqual(['test cloud: the cloud process died'],
                         proc.stop())
