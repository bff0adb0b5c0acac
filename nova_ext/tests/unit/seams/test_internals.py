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

import fixtures

from nova_ext import compat
from nova_ext import exception
from nova_ext.seams import internals
from nova_ext.tests import fixtures as ext_fixtures
from nova_ext.tests.unit import base


class TestCheck(base.TestCase):

    def setUp(self):
        super().setUp()
        # Passes remembered by earlier tests of this process.
        self.useFixture(fixtures.MonkeyPatch(
            'nova_ext.seams.internals._PASSED', {}))
        self.asked = []
        real = compat.check_nova_version

        def counted(point, tested=None):
            self.asked.append(point)
            return real(point, tested)
        self.useFixture(fixtures.MonkeyPatch(
            'nova_ext.compat.check_nova_version', counted))

    def test_a_pass_is_remembered_per_point(self):
        internals.check('nova.first')
        internals.check('nova.first')
        internals.check('nova.second')
        internals.check('nova.first')
        self.assertEqual(['nova.first', 'nova.second'], self.asked)

    def test_other_tested_versions_are_asked_again(self):
        internals.check('nova.first')
        self.useFixture(ext_fixtures.UntestedNova())
        e = self.assertRaises(exception.UnsupportedNovaVersion,
                              internals.check, 'nova.first')
        self.assertIn('nova.first', str(e))
        self.assertEqual(['nova.first', 'nova.first'], self.asked[-2:])
