"""tools/stestr_suites.py: several suites, one stestr run each."""

import importlib.util
import os
import subprocess
import sys

import fixtures
from stestr.repository import file as file_repository

from nova_ext.tests.unit import base

SUITES = os.path.abspath(os.path.join(
    os.path.dirname(__file__), '..', '..', '..', '..', 'stestr_suites.py'))

TEST = '''
import unittest


class Test(unittest.TestCase):

    def test_it(self):
        self.assertTrue(%s)
'''


class TestSuites(base.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path

    def suite(self, name, passes):
        os.makedirs(os.path.join(self.dir, name))
        open(os.path.join(self.dir, name, '__init__.py'), 'w').close()
        with open(os.path.join(self.dir, name, 'test_%s.py' % name),
                  'w') as f:
            f.write(TEST % passes)
        return './%s:.' % name

    def run_suites(self, *suites):
        return subprocess.run(
            [sys.executable, SUITES] + list(suites) + ['--'], cwd=self.dir,
            capture_output=True, text=True, timeout=300)

    def test_every_suite_runs_after_one_failed(self):
        done = self.run_suites(self.suite('first', False),
                               self.suite('second', True))
        self.assertNotEqual(0, done.returncode)
        self.assertIn('first.test_first.Test.test_it', done.stdout)
        self.assertIn('second.test_second.Test.test_it', done.stdout)

    def test_all_passing_pass(self):
        done = self.run_suites(self.suite('first', True),
                               self.suite('second', True))
        self.assertEqual(0, done.returncode, done.stdout + done.stderr)
        self.assertIn('second.test_second.Test.test_it', done.stdout)


def _load_suites():
    spec = importlib.util.spec_from_file_location('stestr_suites', SUITES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TestTimes(base.TestCase):
    """The recorded times a clean checkout's runs are shared out by."""

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.suites = _load_suites()

    def repository(self, name, times=None):
        """A stestr repository, made by stestr, with ``times`` recorded."""
        os.mkdir(os.path.join(self.dir, name))
        subprocess.run([sys.executable, '-m', 'stestr', '--repo-url',
                        os.path.join(self.dir, name), 'init'], check=True,
                       capture_output=True)
        path = os.path.join(self.dir, name, self.suites.REPOSITORY)
        if times:
            self.suites.seed_times(path, times)
        return path

    def stestr_times(self, path, test_ids):
        return file_repository.Repository(path).get_test_times(test_ids)

    def test_written_times_are_what_stestr_shares_out_by(self):
        recorded = self.repository('recorded', {
            'nova_ext.tests.functional.test_a.T.test_slow': '80.25',
            'nova_ext_tools.tests.unit.test_b.T.test_fast': '0.5',
            'nova_ext_tools.tests.deployment.test_c.T.test_it': '100.0'})
        path = os.path.join(self.dir, 'times.txt')
        self.assertEqual(0, self.suites.write_times(recorded, path))
        times = self.suites.read_times(path)
        # The deployment tests run one at a time: their times are not kept.
        self.assertEqual({
            'nova_ext.tests.functional.test_a.T.test_slow': '80.2',
            'nova_ext_tools.tests.unit.test_b.T.test_fast': '0.5'}, times)
        clean = self.repository('clean')
        self.suites.seed_times(clean, times)
        self.assertEqual(
            {'known': {'nova_ext.tests.functional.test_a.T.test_slow': 80.2},
             'unknown': {'nova_ext.tests.functional.test_a.T.test_new'}},
            self.stestr_times(clean, [
                'nova_ext.tests.functional.test_a.T.test_slow',
                'nova_ext.tests.functional.test_a.T.test_new']))

    def test_a_time_recorded_here_is_kept(self):
        own = self.repository('own', {'pkg.test_a.T.test_it': '3.0'})
        self.suites.seed_times(own, {'pkg.test_a.T.test_it': '9.0',
                                     'pkg.test_a.T.test_other': '1.0'})
        self.assertEqual(
            {'pkg.test_a.T.test_it': 3.0, 'pkg.test_a.T.test_other': 1.0},
            self.stestr_times(own, ['pkg.test_a.T.test_it',
                                    'pkg.test_a.T.test_other'])['known'])

    def test_a_repository_without_times_writes_no_file(self):
        empty = self.repository('empty')
        path = os.path.join(self.dir, 'times.txt')
        self.assertEqual(1, self.suites.write_times(empty, path))
        self.assertFalse(os.path.exists(path))
        self.assertEqual({}, self.suites.read_times(path))

    def test_the_checkout_s_file_names_tests_that_exist(self):
        times = self.suites.read_times(self.suites.TIMES)
        self.assertGreater(len(times), 100)
        for test_id in times:
            self.assertTrue(test_id.startswith(self.suites.TIMED), test_id)
            float(times[test_id])
