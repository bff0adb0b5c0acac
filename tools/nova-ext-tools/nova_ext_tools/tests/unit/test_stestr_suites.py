"""tools/stestr_suites.py: several suites, one stestr run each."""

import os
import subprocess
import sys

import fixtures

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
