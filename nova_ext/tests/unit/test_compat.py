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

import logging

import fixtures

from nova_ext import compat
from nova_ext import exception
from nova_ext.tests import fixtures as ext_fixtures
from nova_ext.tests.unit import base

LOG = logging.getLogger(__name__)


class TestTested(base.TestCase):

    def setUp(self):
        super().setUp()
        self.logged = self.useFixture(fixtures.FakeLogger(
            name=__name__, level=logging.ERROR, format='%(message)s'))

    def test_a_tested_nova_logs_nothing(self):
        self.assertTrue(compat.tested('the point', LOG, 'without it'))
        self.assertEqual('', self.logged.output)

    def test_an_untested_nova_is_refused_and_said_once(self):
        self.useFixture(ext_fixtures.UntestedNova())
        self.assertFalse(compat.tested('the point', LOG, 'without it'))
        (line,) = self.logged.output.splitlines()
        self.assertIn('the point', line)
        self.assertTrue(line.endswith('; without it'), line)
        # Without a consequence, the refusal alone.
        self.assertFalse(compat.tested('another point', LOG))
        self.assertEqual(
            str(exception.UnsupportedNovaVersion(
                'another point', compat.nova_version(), compat.TESTED_NOVA)),
            self.logged.output.splitlines()[1])

    def test_the_check_given_is_made(self):
        asked = []

        def refuse(point):
            asked.append(point)
            raise exception.UnsupportedNovaVersion(
                point, compat.nova_version(), compat.TESTED_NOVA)
        self.assertFalse(compat.tested('p', LOG, check=refuse))
        self.assertEqual(['p'], asked)
