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
"""What status says nova-api does, from what the index database shows."""

from nova_ext.index.upkeep import status
from nova_ext.tests.unit import base


def _row(unrecorded, unrecorded_lag, updated_at=1000.0, host='api1',
         pid=7, pages=None, silent=None):
    return {'host': host, 'pid': pid, 'driver': 'index',
            'started_at': 0.0, 'updated_at': updated_at,
            'counts': {'served': 5, 'unservable': 1, 'last_reason': 'x'},
            'reasons': {'unservable': {'marker N is not in the index '
                                       'yet': 1}},
            'unrecorded': unrecorded, 'unrecorded_lag': unrecorded_lag,
            'pages': pages, 'silent': silent}


def _report(pending=0, revision='h', api=(), max_lag=10.0):
    report = {'connection': 'sqlite://', 'revision': revision, 'head': 'h',
              'pending': pending, 'catch_up_limit': 200,
              'oldest_pending_age': 3.25 if pending else 0.0,
              'max_lag': max_lag, 'cells': [], 'reconcile': None,
              'api': [status.api_process(row, max_lag, 1010.0)
                      for row in api]}
    report['reasons'] = status.reasons(report)
    report['healthy'] = not report['reasons']
    return report


class TestVerdict(base.TestCase):

    def test_all_recorded(self):
        report = _report(pending=200, api=[_row(0, 0.0)])
        self.assertEqual([], report['reasons'])
        (api,) = report['api']
        self.assertEqual((10.0, True, None),
                         (api['reported_ago'], api['current'],
                          api['answers_from_nova']))

    def test_pending_above_catch_up_limit(self):
        self.assertEqual(['nova-api answers from Nova: 250 marks pending, '
                          'catch_up_limit 200'],
                         _report(pending=250)['reasons'])

    def test_schema_not_at_head(self):
        self.assertEqual(['nova-api answers from Nova: the index schema is '
                          'at revision g, this nova_ext needs h: run '
                          '"nova-ext-manage index db_sync"'],
                         _report(revision='g')['reasons'])

    def test_unrecorded_changes_of_a_process(self):
        report = _report(api=[_row(2, 12.0),
                              _row(1, 0.5, pid=8),
                              _row(0, 0.0, pid=9)])
        self.assertEqual(
            ['nova-api on api1/7 answers from Nova: changes unrecorded for '
             '12.0 s (max_lag 10.0 s)',
             'nova-api on api1/8 answers from Nova: 1 captured changes not '
             'recorded in the index yet'], report['reasons'])

    def test_holders_a_process_waits_for(self):
        report = _report(api=[
            _row(0, 0.0, silent={'holders': ['h1', 'h2'], 'window': 4.0}),
            _row(0, 0.0, pid=8, silent={'holders': None, 'window': 4.0}),
            _row(0, 0.0, pid=9, silent={'holders': [], 'window': 4.0}),
            _row(0, 0.0, pid=10)])
        # Shown, not judged: a report may catch a process's first
        # moments, when no holder has vouched yet in its eyes.
        self.assertEqual([], report['reasons'])
        self.assertEqual(
            ['2 holders of marks have not shown in 4.0 s that they '
             'recorded their changes (h1, h2)',
             'the holders of marks not read in the last 4.0 s', None, None],
            [r['not_vouching'] for r in report['api']])
        report['holders'] = [{'holder': 'h1', 'host': 'c1', 'pid': 3,
                              'beats': 9, 'vouches': 4}]
        lines = list(status.lines(report))
        self.assertIn('nova-api api1/7 (index, reported 10 s ago): served '
                      '5, unservable 1; unrecorded 0; 2 holders of marks '
                      'have not shown in 4.0 s that they recorded their '
                      'changes (h1, h2)', lines)
        self.assertIn('nova-api api1/9 (index, reported 10 s ago): served '
                      '5, unservable 1; unrecorded 0', lines)
        self.assertEqual('holder h1: c1/3, 9 beats, 4 vouches', lines[-1])

    def test_old_reports_do_not_decide(self):
        old = 1010.0 - status.REPORTED_WITHIN - 1
        report = _report(api=[_row(2, 12.0,
                                   updated_at=old),
                              _row(None, None)])
        self.assertEqual([], report['reasons'])
        self.assertFalse(report['api'][0]['current'])
        self.assertIsNotNone(report['api'][0]['answers_from_nova'])
        self.assertIsNone(report['api'][1]['answers_from_nova'])

    def test_lines(self):
        report = _report(pending=250, api=[_row(2, 12.0),
                                           _row(None, None, pid=8)])
        self.assertEqual([
            'index database:  sqlite://',
            'schema revision: h (head h)',
            "pending:         250 marks (catch_up_limit 200), the oldest "
            "recorded 3.2 s ago by its writer's clock",
            'max_lag:         10.0 s, for the changes a nova-api process '
            'could not record',
            'health:          NOT OK: nova-api answers from Nova: 250 marks '
            'pending, catch_up_limit 200',
            'health:          NOT OK: nova-api on api1/7 answers from Nova: '
            'changes unrecorded for 12.0 s (max_lag 10.0 s)',
            'reconcile:       no pass finished yet',
            'nova-api api1/7 (index, reported 10 s ago): served 5, '
            'unservable 1; unrecorded 2, the oldest for 12.0 s',
            '    unservable 1: marker N is not in the index yet',
            'nova-api api1/8 (index, reported 10 s ago): served 5, '
            'unservable 1',
            '    unservable 1: marker N is not in the index yet'],
            list(status.lines(report)))
        report = _report(api=[_row(0, 0.0)])
        lines = list(status.lines(report))
        self.assertIn('pending:         0 marks (catch_up_limit 200)', lines)
        self.assertIn('health:          OK: nova-api lists from the index',
                      lines)
        self.assertEqual('nova-api api1/7 (index, reported 10 s ago): '
                         'served 5, unservable 1; unrecorded 0', lines[-2])
        pages = {'kept': 3, 'brought': 2, 'listed': 1, 'missed': 4}
        lines = list(status.lines(_report(api=[_row(0, 0.0, pages=pages)])))
        self.assertEqual('nova-api api1/7 (index, reported 10 s ago): '
                         'served 5, unservable 1; unrecorded 0; pages '
                         'brought 2, kept 3, listed 1, missed 4', lines[-2])
