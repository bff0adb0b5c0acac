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
"""The notes below nova-ext-bench list's table."""

from nova_ext.bench import listing
from nova_ext.tests.unit import base


def _cloud(bare, cached):
    ms = {q.name: {p: {'median': 100.0, 'min': 50.0, 'p90': 150.0}
                   for p in listing.PATHS} for q in listing.QUERIES}
    ms[listing.HEADLINE][listing.CACHED]['median'] = cached
    return {'ms': ms, 'bare_ms': {'median': bare}}


class TestNotes(base.TestCase):

    def test_floor_growth_beside_the_cached_growth(self):
        clouds = {2: _cloud(40.0, 100.0), 32: _cloud(60.0, 200.0)}
        notes = listing._notes(clouds, [2, 32])
        self.assertIn('200% over the fastest', notes[0])
        self.assertEqual(
            'the bare reference itself: bare@32 / bare@2 = 1.50 (medians), '
            'against cached@32 / cached@2 = 2.00 for detail admin.',
            notes[-1])
        self.assertEqual(1, len(listing._notes(clouds, [2])))
