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
"""The index's metrics and an indexer's health, from a status report."""

import types

from nova_ext.index.upkeep import exporter
from nova_ext.tests.unit import base
from nova_ext.tests.unit.index.upkeep import test_status


def samples(report):
    """``{(name, sorted labels): value}`` of the families of ``report``."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in exporter.families(report)
            for s in family.samples}


def _indexer():
    return types.SimpleNamespace(
        endpoint=types.SimpleNamespace(failures=0), worker=None)


class TestFamilies(base.TestCase):

    def test_what_nova_api_does(self):
        labels = (('driver', 'index'), ('host', 'api1'), ('pid', '7'))
        report = test_status._report(
            pending=250, api=[test_status._row(2, 12.0)])
        got = samples(report)
        self.assertEqual(0, got[('nova_ext_index_healthy', ())])
        self.assertEqual(250, got[('nova_ext_index_pending_changes', ())])
        self.assertEqual(200, got[('nova_ext_index_catch_up_limit', ())])
        self.assertEqual(3.25, got[(
            'nova_ext_index_oldest_pending_age_seconds', ())])
        self.assertEqual(2, got[('nova_ext_index_api_unrecorded_changes',
                                 labels)])
        self.assertEqual(12.0, got[(
            'nova_ext_index_api_unrecorded_lag_seconds', labels)])
        self.assertEqual(5, got[(
            'nova_ext_index_api_list_requests_total',
            tuple(sorted(labels + (('outcome', 'served'),))))])
        self.assertEqual(1, got[(
            'nova_ext_index_api_list_handed_total',
            tuple(sorted(labels + (
                ('outcome', 'unservable'),
                ('reason', 'marker N is not in the index yet')))))])
        self.assertNotIn(('nova_ext_index_lag_seconds', ()), got)
        # Without the page cache, no lookups; with it, each outcome's.
        self.assertFalse([k for k in got if k[0].startswith(
            'nova_ext_index_api_page_cache')])
        got = samples(test_status._report(api=[test_status._row(
            0, 0.0, pages={'kept': 3, 'brought': 2, 'listed': 0,
                           'missed': 1})]))
        self.assertEqual(2, got[(
            'nova_ext_index_api_page_cache_lookups_total',
            tuple(sorted(labels + (('outcome', 'brought'),))))])
        self.assertEqual(0, got[(
            'nova_ext_index_api_page_cache_lookups_total',
            tuple(sorted(labels + (('outcome', 'listed'),))))])

        got = samples(test_status._report(
            api=[test_status._row(0, 0.0),
                 test_status._row(None, None, pid=8)]))
        self.assertEqual(1, got[('nova_ext_index_healthy', ())])
        self.assertEqual(0, got[('nova_ext_index_api_unrecorded_changes',
                                 labels)])
        # A process that did not publish them has none.
        self.assertEqual(
            ['7'], [dict(k[1])['pid'] for k in got
                    if k[0] == 'nova_ext_index_api_unrecorded_changes'])

    def test_holders_and_what_each_process_saw_of_them(self):
        labels = (('driver', 'index'), ('host', 'api1'))
        report = test_status._report(api=[
            test_status._row(0, 0.0, silent={'holders': ['h1', 'h2'],
                                             'window': 4.0}),
            test_status._row(0, 0.0, pid=8, silent={'holders': None,
                                                    'window': 4.0}),
            test_status._row(0, 0.0, pid=9, silent={'holders': [],
                                                    'window': 4.0}),
            test_status._row(0, 0.0, pid=10)])
        report['holders'] = [
            {'holder': 'h1', 'host': 'c1', 'pid': 20, 'beats': 40,
             'vouches': 12},
            {'holder': 'h2', 'host': 'c2', 'pid': 21, 'beats': 3,
             'vouches': 0}]
        got = samples(report)

        def by_pid(name):
            return {dict(k[1])['pid']: v for k, v in got.items()
                    if k[0] == name and k[1][:2] == labels}

        # A process that did not publish what it saw has neither.
        self.assertEqual({'7': 1, '8': 0, '9': 1},
                         by_pid('nova_ext_index_api_holders_read'))
        self.assertEqual({'7': 2, '9': 0},
                         by_pid('nova_ext_index_api_holders_not_vouching'))
        self.assertEqual(
            {('nova_ext_index_holder_beats_total', 'h1', 'c1', '20', 40),
             ('nova_ext_index_holder_vouches_total', 'h1', 'c1', '20', 12),
             ('nova_ext_index_holder_beats_total', 'h2', 'c2', '21', 3),
             ('nova_ext_index_holder_vouches_total', 'h2', 'c2', '21', 0)},
            {(k[0], dict(k[1])['holder'], dict(k[1])['host'],
              dict(k[1])['pid'], v)
             for k, v in got.items()
             if k[0].startswith('nova_ext_index_holder_')})
        # An index not upgraded to the holders table: no holder.
        report['holders'] = None
        self.assertFalse([k for k in samples(report)
                          if k[0].startswith('nova_ext_index_holder_')])

    def test_unreadable(self):
        self.assertEqual({('nova_ext_index_up', ()): 0}, samples(None))


class TestIndexerHealth(base.TestCase):

    def test_says_what_nova_api_does_without_failing_the_indexer(self):
        report = test_status._report(pending=250)
        healthy, details = exporter.indexer_health(_indexer(), report)
        self.assertTrue(healthy)
        self.assertEqual(
            {'index_readable': True, 'record_failures_in_a_row': 0,
             'pending': 250, 'catch_up_limit': 200,
             'oldest_pending_age': 3.25, 'api_lists_from_index': False,
             'api_reasons': ['nova-api answers from Nova: 250 marks '
                             'pending, catch_up_limit 200'],
             'schema_at_head': True}, details)
        healthy, details = exporter.indexer_health(_indexer(),
                                                   test_status._report())
        self.assertTrue(details['api_lists_from_index'])
        self.assertEqual([], details['api_reasons'])

    def test_schema_behind_fails_the_indexer(self):
        healthy, details = exporter.indexer_health(
            _indexer(), test_status._report(revision='g'))
        self.assertFalse(healthy)
        self.assertFalse(details['api_lists_from_index'])
