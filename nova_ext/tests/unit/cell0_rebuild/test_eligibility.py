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
"""Which servers in cell0 may be rebuilt from there."""

from nova import exception as nova_exception
import testtools

from nova_ext.cell0_rebuild import eligibility


class TestEligibility(testtools.TestCase):

    def test_faults(self):
        cases = [
            (nova_exception.NoValidHost(reason=''), True),
            (nova_exception.NoValidHost(
                reason='There are not enough hosts available.'), True),
            (nova_exception.TooManyInstances(
                overs='ram', req=1, used=2, allowed=2), False),
            (nova_exception.MaxRetriesExceeded(reason='3 tries'), False),
            (nova_exception.InstanceNotFound(instance_id='x'), False),
        ]
        for exc, expected in cases:
            self.assertEqual(expected, eligibility.failed_for_resources(
                exc.format_message()), exc.format_message())
        self.assertFalse(eligibility.failed_for_resources(None))
        self.assertFalse(eligibility.failed_for_resources(''))
