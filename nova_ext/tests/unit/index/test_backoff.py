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

from nova_ext.index import backoff
from nova_ext.tests.unit import base


class TestPauses(base.TestCase):

    def test_doubling_to_the_most_per_failure_in_a_row(self):
        pause = backoff.pauses(0.1, 2.0)
        self.assertEqual([0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0],
                         [pause(n) for n in range(1, 8)])
        # Asked again for an earlier count: no state between calls.
        self.assertEqual(0.1, pause(1))
