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
"""The benchmark's PNG chart and its legend."""

import os
import struct

import fixtures

from nova_ext.tests.unit import base

from nova_ext_tools.bench import listquery
from nova_ext_tools.bench import plot


class TestChart(base.TestCase):

    def setUp(self):
        super().setUp()
        self.path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                 'list.png')

    def test_list_series_each_get_their_own_colour(self):
        # The list benchmark draws every path and the bare reference.
        names = listquery.PATHS + ('bare',)
        series = {name: [(2, 10.0 * n), (32, 20.0 * n)]
                  for n, name in enumerate(names, 1)}
        legend = plot.chart(series, self.path)
        self.assertEqual(set(names), set(legend))
        self.assertEqual(len(names), len(set(legend.values())), legend)
        with open(self.path, 'rb') as f:
            png = f.read()
        self.assertTrue(png.startswith(b'\x89PNG\r\n\x1a\n'))
        self.assertEqual((plot.WIDTH, plot.HEIGHT),
                         struct.unpack('>II', png[16:24]))

    def test_more_series_than_colours_is_refused(self):
        series = {'s%d' % n: [(1, 1.0)] for n in range(len(plot.COLOURS) + 1)}
        self.assertRaises(ValueError, plot.chart, series, self.path)
        self.assertFalse(os.path.exists(self.path))
