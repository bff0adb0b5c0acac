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
"""nova-api's published counters, on a real SQLite index database."""

import os
import socket

from nova_ext.index import schema
from nova_ext.index.upkeep import metrics
from nova_ext.tests.unit.index import base as index_base


class TestMetrics(index_base.IndexDBTestCase):

    def test_unrecorded_beside_the_counters(self):
        metrics.publish(self.engine, 'index', {'served': 3}, now=100.0,
                        unrecorded=2, unrecorded_lag=4.5)
        (row,) = metrics.collect(self.engine)
        self.assertEqual((socket.gethostname(), os.getpid(), 'index', 100.0),
                         (row['host'], row['pid'], row['driver'],
                          row['updated_at']))
        self.assertEqual({'served': 3}, row['counts'])
        self.assertEqual((2, 4.5), (row['unrecorded'], row['unrecorded_lag']))

    def test_reasons_beside_the_counters(self):
        reasons = {'unservable': {'N captured changes not recorded in the '
                                  'index yet': 2}}
        metrics.publish(self.engine, 'index', {'served': 3,
                                               'reasons': reasons})
        (row,) = metrics.collect(self.engine)
        self.assertEqual(({'served': 3}, reasons),
                         (row['counts'], row['reasons']))

    def test_page_cache_lookups_beside_the_counters(self):
        pages = {'kept': 3, 'brought': 2, 'listed': 0, 'missed': 1}
        metrics.publish(self.engine, 'index', {'served': 3}, pages=pages)
        (row,) = metrics.collect(self.engine)
        self.assertEqual(({'served': 3}, pages), (row['counts'],
                                                  row['pages']))

    def test_holders_not_vouching_beside_the_counters(self):
        for silent in (['h2', 'h1'], [], None):
            metrics.publish(self.engine, 'index', {'served': 3},
                            silent={'holders': silent, 'window': 4.0})
            (row,) = metrics.collect(self.engine)
            self.assertEqual(({'served': 3},
                              {'holders': silent, 'window': 4.0}),
                             (row['counts'], row['silent']))

    def test_a_report_without_unrecorded(self):
        metrics.publish(self.engine, 'index', {'served': 1}, now=100.0)
        (row,) = metrics.collect(self.engine)
        self.assertEqual(({'served': 1}, {}), (row['counts'], row['reasons']))
        self.assertIsNone(row['pages'])
        self.assertIsNone(row['silent'])
        self.assertEqual((None, None),
                         (row['unrecorded'], row['unrecorded_lag']))

    def test_one_row_per_process_and_expiry(self):
        metrics.publish(self.engine, 'index', {'served': 1}, now=100.0,
                        unrecorded=1, unrecorded_lag=1.0)
        metrics.publish(self.engine, 'index', {'served': 2}, now=110.0,
                        unrecorded=0, unrecorded_lag=0.0)
        (row,) = metrics.collect(self.engine)
        self.assertEqual(({'served': 2}, 0, 0.0),
                         (row['counts'], row['unrecorded'],
                          row['unrecorded_lag']))
        with self.engine.begin() as conn:
            conn.execute(schema.API_COUNTERS.insert().values(
                host='gone', pid=1, driver='index', started_at=0.0,
                updated_at=0.0, counts='{}'))
        self.assertEqual(2, len(metrics.collect(self.engine)))
        metrics.publish(self.engine, 'index', {}, now=metrics.EXPIRY + 1)
        self.assertEqual([socket.gethostname()],
                         [r['host'] for r in metrics.collect(self.engine)])
