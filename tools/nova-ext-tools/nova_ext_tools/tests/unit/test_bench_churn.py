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
"""nova-ext-bench list: how the churn path is timed, compared, reported."""

import os
import random
from unittest import mock

import fixtures
import sqlalchemy as sa

from nova_ext.index.apply import source
from nova_ext.tests.unit import base

from nova_ext_tools.bench import isolate
from nova_ext_tools.bench import listanswers
from nova_ext_tools.bench import listchurn
from nova_ext_tools.bench import listquery
from nova_ext_tools.bench import listreport
from nova_ext_tools.bench import listtime
from nova_ext_tools.cmd import bench as bench_cmd
from nova_ext_tools.tests.unit import test_bench_notes as notes


class _Changes(object):
    """Logs, to a file (it runs in a child), each change and request."""

    def __init__(self, log):
        self.log = log
        self.count = 0

    def write(self, what):
        with open(self.log, 'a') as lines:
            lines.write(what + '\n')

    def before(self, path, query):
        if path == listquery.CHURN:
            self.count += 1
            self.write('change')

    def close(self):
        self.write('close')
        return {'changed': self.count}


class TestChurnChild(base.TestCase):

    QUERIES = listquery.QUERIES[:2]

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        self.log = os.path.join(tmp, 'log')
        self.engine = sa.create_engine(
            'sqlite:///%s' % os.path.join(tmp, 'index.sqlite'))
        self.addCleanup(self.engine.dispose)
        source.INSTANCES.create(self.engine)

    def test_each_request_follows_its_change_and_close_comes_back(self):
        selector = notes._Selector()
        inner = notes._call(notes._Api(selector), selector)

        def call(path, query):
            with open(self.log, 'a') as lines:
                lines.write('request\n')
            return inner(path, query)

        jobs, timeout = listtime.child_jobs(
            self.QUERIES, (listquery.CHURN,), call, self.engine, warmup=1,
            repeat=1, limit=1000,
            changes=lambda: _Changes(self.log))
        run = isolate.in_processes(jobs, 1, timeout)[listquery.CHURN][0]
        with open(self.log) as lines:
            seen = lines.read().split()
        # 2 queries x 3 rounds (2 untimed), each request right after its
        # change (the bare samples between them change nothing), then
        # everything put back.
        self.assertEqual(['change', 'request'] * 6 + ['close'], seen)
        self.assertEqual({'changed': 6}, run['changes'])
        # Served as asked: rendered with the render cache, as cached.
        self.assertEqual(0, sum(run['fallbacks'].values()))

    def test_a_path_compared_with_nova_in_its_own_state(self):
        def call(path, query):
            response = notes._Response()
            response.content = path.encode('ascii')
            return response, True

        def churn(queries, call):
            return [(q.name, (200, 'churned', True, 1.0, 200, 'nova'))
                    for q in queries]

        got, wants = listanswers.first_answers(
            self.QUERIES, (listquery.CACHED, listquery.CHURN), call,
            {listquery.CHURN: churn})
        for query in self.QUERIES:
            self.assertEqual(b'cached',
                             got[(query.name, listquery.CACHED)][0].content)
            self.assertEqual(b'churned',
                             got[(query.name, listquery.CHURN)][0].content)
            self.assertEqual(b'nova',
                             wants[(query.name, listquery.CHURN)].content)
        self.assertEqual({(q.name, listquery.CHURN) for q in self.QUERIES},
                         set(wants))


class TestChurnChanges(base.TestCase):
    """What a churn request is asked after: a tenth of its page changed."""

    def test_the_page_is_listed_warm_before_its_share_changes(self):
        done = []
        page = [{'id': 'u%d' % n} for n in range(20)]

        def call(path, query):
            done.append(('list', path, query.name))
            response = notes._Response()
            response.status_code = 200
            response.json = lambda: {'servers': page}
            return response, True

        def write(ctx, cells, changes):
            done.append(('change', sorted(
                uuid for by_uuid in changes.values() for uuid in by_uuid)))
        self.useFixture(fixtures.MockPatchObject(listchurn, '_write', write))
        churn = object.__new__(listchurn.Churn)
        churn.call, churn.ctx, churn.cells = call, None, {}
        churn.cell_of = {s['id']: 'cell1' for s in page}
        churn.snapshot = mock.Mock(rows={'cell1': {
            s['id']: (s['id'], None) for s in page}})
        churn.random = random.Random(0)
        churn.pages, churn.changes, churn.changed, churn.seconds = (
            {}, 0, [], [])
        query = listquery.QUERIES[0]
        churn.before(listquery.CACHED, query)
        self.assertEqual([], done)
        for _ in range(2):
            churn.before(listquery.CHURN, query)
        # Before each change the query listed (the changes made for other
        # queries rendered; the page learnt from the first), then 2 of its
        # 20 servers changed.
        kinds = [step[0] for step in done]
        self.assertEqual(['list', 'change', 'list', 'change'], kinds)
        self.assertEqual({listquery.CHURN},
                         {step[1] for step in done if step[0] == 'list'})
        self.assertEqual([2, 2], [len(step[1]) for step in done
                                  if step[0] == 'change'])


def _cached_and_churn(bare, cached, churn, stock):
    cloud = notes._cached_alone(bare, cached, stock)
    for by_path in cloud['ms'].values():
        by_path[listquery.CHURN] = dict(by_path[listquery.CACHED],
                                        median=churn)
    cloud['fallbacks'].update({'%s (churn)' % q.name: 0
                               for q in listquery.QUERIES})
    cloud['churn'] = {'children': 2, 'servers_per_request': 100,
                      'requests': 112, 'change_ms_median': [41.0, 39.0],
                      'restored': [[0, 800], [0, 790]]}
    return cloud


class TestChurnReport(base.TestCase):

    def test_the_option_takes_churn(self):
        self.assertEqual(('cached', 'churn'),
                         bench_cmd._index_paths('churn,cached'))
        self.assertIn(listquery.CHURN, bench_cmd.parse_args(['list']).paths)

    def test_churn_beside_cached_and_nova(self):
        clouds = {2: _cached_and_churn(40.0, 100.0, 150.0, 5000.0),
                  8: _cached_and_churn(45.0, 110.0, 200.0, 6600.0)}
        measured = [2, 8]
        self.assertEqual(
            (listquery.STOCK, listquery.CACHED, listquery.CHURN),
            listreport._paths(clouds, measured))
        headline = [r for r in listreport.make_table(clouds, measured)
                    if r['query'] == listquery.HEADLINE]
        self.assertEqual(33.0, headline[1]['stock_over_churn'])
        # Only its speed-up over Nova's path is a target of churn.
        churn = [t for t in listreport.make_targets(clouds, measured)
                 if t['target'].startswith('churn')]
        self.assertEqual(1, len(churn))
        self.assertIn('at least 10x faster than stock at 8 cells',
                      churn[0]['target'])
        self.assertEqual(33.0, churn[0]['measured'])
        self.assertTrue(churn[0]['met'])
        shown = [n for n in listreport.make_notes(clouds, measured)
                 if n.startswith('8 cells, detail admin: churn')]
        self.assertEqual(
            ['8 cells, detail admin: churn 200 ms, stock 6600 ms, '
             'stock/churn 33.0; cached 110 ms, stock/cached 60.0, '
             'churn/cached 1.82. Before each churn request, 100 servers of '
             'its page were renamed in their cells and marked by capture, '
             'outside the timing (median per child: 41, 39 ms); each child '
             'put back 0+800, 0+790 servers.'], shown)
        row = listreport._row(headline[1])
        self.assertEqual(('detail admin', 8, 1000, '6600 (150)', '-', '-',
                          '110 (150)', '200 (150)', '900', '-', '-', '60.00',
                          '33.00', '-', '2.4', '-', '1.10', 'yes'), row)
