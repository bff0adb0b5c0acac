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
"""nova-ext-bench list: its notes, the GC clock, how paths are timed."""

import argparse
import collections
import datetime
import functools
import gc
import io
import os
import subprocess
import sys

import fixtures
from oslo_utils import uuidutils
import sqlalchemy as sa

from nova_ext.index.apply import source
from nova_ext.tests.unit import base

from nova_ext_tools.bench import isolate
from nova_ext_tools.bench import listanswers
from nova_ext_tools.bench import listcloud
from nova_ext_tools.bench import listing
from nova_ext_tools.bench import listquery
from nova_ext_tools.bench import listreport
from nova_ext_tools.bench import listtime
from nova_ext_tools.bench import measure
from nova_ext_tools.bench import quiet
from nova_ext_tools.cmd import bench as bench_cmd


#: The paths of a run that timed every path but churn.
NO_CHURN = tuple(p for p in listquery.PATHS if p != listquery.CHURN)


def _cloud(bare, cached, paths=NO_CHURN):
    ms = {q.name: {p: {'median': 100.0, 'min': 50.0, 'p90': 150.0}
                   for p in paths} for q in listquery.QUERIES}
    ms[listquery.HEADLINE][listquery.CACHED]['median'] = cached
    return {'ms': ms, 'bare_ms': {'median': bare}}


class TestNotes(base.TestCase):

    def test_floor_growth_beside_the_cached_growth(self):
        clouds = {2: _cloud(40.0, 100.0), 32: _cloud(60.0, 200.0)}
        notes = listreport.make_notes(clouds, [2, 32])
        self.assertIn('200% over the fastest', notes[0])
        self.assertEqual(
            'the bare reference itself: bare@32 / bare@2 = 1.50 (medians), '
            'against cached@32 / cached@2 = 2.00 for detail admin.',
            notes[-1])
        self.assertEqual(1, len(listreport.make_notes(clouds, [2])))

    def test_time_in_the_collector_per_path(self):
        cloud = _cloud(40.0, 100.0)
        cloud['gc_ms'] = {q.name: {p: {'median': 1.0, 'max': 2.0}
                                   for p in listquery.PATHS}
                          for q in listquery.QUERIES}
        cloud['gc_ms'][listquery.HEADLINE][listquery.STOCK] = {
            'median': 700.0, 'max': 1500.0}
        cloud['live_objects'] = 1921000
        notes = listreport.make_notes({2: cloud}, [2])
        self.assertEqual(
            '2 cells, detail admin: median (max) ms in the garbage '
            'collector inside each request: stock 700.0 (1500), index 1.0 '
            '(2), fast 1.0 (2), cached 1.0 (2); 1921000 live objects in '
            'the process.', notes[1])

    def test_each_childs_median_and_the_range_over_pairs(self):
        clouds = {2: _cloud(40.0, 100.0), 32: _cloud(60.0, 120.0)}
        for cells, cached in ((2, [100.0, 125.0]), (32, [110.0, 150.0])):
            clouds[cells]['per_process_ms'] = {
                path: {listquery.HEADLINE: [90.0, 95.0]}
                for path in listquery.INDEXED}
            clouds[cells]['per_process_ms'][listquery.CACHED][
                listquery.HEADLINE] = cached
            clouds[cells]['bare_per_process_ms'] = {
                path: [45.0, 50.0] for path in listquery.INDEXED}
            clouds[cells]['bare_per_process_ms'][listquery.CACHED] = [
                40.0, 50.0]
            clouds[cells]['children'] = {'wall': 800.4, 'parent_cpu': 47.6}
        notes = listreport.make_notes(clouds, [2, 32])
        self.assertEqual(
            '2 cells, detail admin: median ms in each process of its own, '
            'with the bare reference timed in the same process: index 90 '
            '(bare 45.0, 2.0x), 95 (bare 50.0, 1.9x); fast 90 (bare 45.0, '
            '2.0x), 95 (bare 50.0, 1.9x); cached 100 (bare 40.0, 2.5x), 125 '
            '(bare 50.0, 2.5x).', notes[1])
        self.assertEqual(
            '2 cells: the benchmark process used 48 s of CPU (its '
            'in-process services) while its children ran for 800 s.',
            notes[2])
        # 110/125 to 150/100; turn by turn 110/100 and 150/125.
        self.assertEqual(
            'cached@32 / cached@2 for detail admin over every pair of '
            'their processes: 0.88 to 1.50; turn by turn, the two children '
            'timed minutes apart: 1.10, 1.20 (median 1.15).', notes[-1])

    def test_flatness_net_of_the_floor_from_the_same_processes(self):
        clouds = {2: _cloud(40.0, 100.0), 32: _cloud(60.0, 150.0)}
        for cells, floor in ((2, 40.0), (32, 50.0)):
            clouds[cells]['bare_by_path_ms'] = {
                path: {'median': 1000.0} for path in listquery.INDEXED}
            clouds[cells]['bare_by_path_ms'][listquery.CACHED] = {
                'median': floor}
        notes = listreport.make_notes(clouds, [2, 32])
        # 150/50 over 100/40; the pooled bare (60 and 40) is not used.
        self.assertEqual(
            'cached/bare for detail admin, bare from the same processes: '
            '2.50 at 2 cells, 3.00 at 32; their ratio, flatness net of the '
            'floor and of the machine\'s swings: 1.20.', notes[-1])
        self.assertEqual(50.0, listreport._bare(clouds[32], listquery.CACHED))
        target = [t for t in listreport.make_targets(clouds, [2, 32])
                  if t['target'].startswith('cached within')][0]
        self.assertEqual(3.0, target['measured'])
        # Without per-path samples, the pooled bare reference.
        del clouds[32]['bare_by_path_ms']
        self.assertEqual(60.0, listreport._bare(clouds[32], listquery.CACHED))

    def test_children_that_ran_alone(self):
        clouds = {2: _cloud(40.0, 100.0)}
        clouds[2]['per_process_ms'] = {
            path: {listquery.HEADLINE: [90.0]} for path in listquery.INDEXED}
        clouds[2]['bare_per_process_ms'] = {
            path: [45.0] for path in listquery.INDEXED}
        clouds[2]['children'] = {'wall': 800.4, 'parent_cpu': 2.0,
                                 'settle': 12.4, 'computes_up': 7.6}
        clouds[2]['alone'] = {listquery.INDEX: [3, 3],
                              listquery.CACHED: [2, 3]}
        clouds[2]['stock_alone'] = True
        notes = listreport.make_notes(clouds, [2])
        self.assertIn(
            '2 cells: children that ran their timed requests with every '
            'cloud process stopped: 3 of 3 index; 2 of 3 cached; Nova\'s '
            'path timed with the other clouds stopped.', notes)
        self.assertIn(
            '2 cells: the benchmark process used 2 s of CPU (its in-process '
            'services) while its children ran for 800 s; it waited 12 s in '
            'all for its threads to settle before forking them. Before '
            'Nova\'s answers, it waited 8 s for every compute\'s heartbeat '
            'to show it up again.', notes)


def _busy_process(test):
    """A process that keeps a core busy until ``test`` ends."""
    busy = subprocess.Popen([sys.executable, '-c',
                             'while True:\n    sum(range(1000))\n'])
    test.addCleanup(busy.wait)
    test.addCleanup(busy.kill)
    return busy


class _Proc(object):
    """A cloud process that notes each step and what ``other`` did."""

    def __init__(self, other):
        self.pid = os.getpid()
        self.other = other
        self.steps = []

    def ask(self, *step):
        self.steps.append((step, quiet.state(self.other) == {'T'}))
        return 'reply'


class TestAsk(base.TestCase):

    def test_the_other_clouds_stop_for_nova_and_are_named_to_children(self):
        busy = _busy_process(self)
        proc, out = _Proc(busy.pid), {}
        for step in (('answers',), ('time', 'cached'), ('stock',)):
            self.assertEqual('reply', listing._ask(proc, step, [busy.pid],
                                                   out))
        self.assertEqual([(('answers',), False),
                          (('time', 'cached', [busy.pid]), False),
                          (('stock',), True)], proc.steps)
        self.assertTrue(out['stock_alone'])
        self.assertNotIn('T', quiet.state(busy.pid))


class TestShow(base.TestCase):

    def _shown(self, differences):
        env = dict.fromkeys(
            ('nova', 'python', 'concurrency', 'cpus', 'response_validation',
             'microversion', 'per_cell', 'repeat', 'warmup_requests',
             'isolation'), 'x')
        results = {'environment': env, 'table': [], 'targets': [],
                   'clouds': {}, 'notes': []}
        out = io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', out))
        listreport.show(results, [], differences)
        return out.getvalue()

    def test_a_difference_is_shouted(self):
        shown = self._shown([(8, 'detail admin (fast)', 'servers[3].name')])
        self.assertIn('!!! THE INDEX AND NOVA ANSWERED DIFFERENTLY:\n'
                      '!!!   8 cells, detail admin (fast): servers[3].name',
                      shown)

    def test_no_difference_says_so(self):
        shown = self._shown([])
        self.assertNotIn('!!!', shown)
        self.assertIn('gave the same bodies as Nova', shown)


def _cached_alone(bare, cached, stock):
    """A cloud as ``--paths cached`` leaves it: stock and cached timed."""
    cloud = _cloud(bare, cached)
    for by_path in cloud['ms'].values():
        del by_path[listquery.INDEX], by_path[listquery.FAST]
        by_path[listquery.STOCK]['median'] = stock
    cloud.update(
        answers={q.name: {'servers': 1000, 'cached_first_ms': 900.0}
                 for q in listquery.QUERIES},
        differences={},
        fallbacks={'%s (cached)' % q.name: 0 for q in listquery.QUERIES},
        bare_rows=1000, bare_bytes=4096)
    return cloud


class TestTimedPaths(base.TestCase):
    """``--paths``: index paths left untimed are left out, not failed."""

    def test_the_option_takes_index_paths_in_the_benchmarks_order(self):
        self.assertEqual(listquery.INDEXED,
                         bench_cmd.parse_args(['list']).paths)
        self.assertEqual(('index', 'cached'),
                         bench_cmd._index_paths('cached, index'))
        for bad in ('stock', 'cached,bare', ','):
            self.assertRaises(argparse.ArgumentTypeError,
                              bench_cmd._index_paths, bad)
        args = bench_cmd.parse_args(['list', '--paths', 'cached'])
        self.assertEqual(('cached',), listcloud.timed_paths(args))
        args = bench_cmd.parse_args(['list'])
        self.assertEqual(listquery.INDEXED, listcloud.timed_paths(args))

    def test_report_of_a_run_that_timed_cached_alone(self):
        clouds = {2: _cached_alone(40.0, 100.0, 5000.0),
                  8: _cached_alone(45.0, 110.0, 6600.0),
                  32: _cached_alone(50.0, 130.0, 9000.0)}
        measured = [2, 8, 32]
        self.assertEqual((listquery.STOCK, listquery.CACHED),
                         listreport._paths(clouds, measured))
        table = listreport.make_table(clouds, measured)
        headline = [r for r in table if r['query'] == listquery.HEADLINE]
        self.assertEqual(60.0, headline[1]['stock_over_cached'])
        self.assertNotIn('index_median', headline[1])
        self.assertNotIn('stock_over_fast', headline[1])
        targets = listreport.make_targets(clouds, measured)
        self.assertEqual([1.3, 60.0, 2.6],
                         [round(t['measured'], 2) for t in targets])
        self.assertTrue(all(t['target'].startswith('cached')
                            for t in targets))
        notes = listreport.make_notes(clouds, measured)
        self.assertEqual(
            'the bare reference itself: bare@32 / bare@2 = 1.25 (medians), '
            'against cached@32 / cached@2 = 1.30 for detail admin.',
            notes[-1])
        row = listreport._row(headline[2])
        self.assertEqual(('detail admin', 32, 1000, '9000 (150)', '-', '-',
                          '130 (150)', '-', '900', '-', '-', '69.23', '-',
                          '-', '2.6', '-', '1.30', 'yes'), row)


class _Cycle(object):
    def __init__(self):
        self.me = self


class TestGcClock(base.TestCase):

    def test_counts_collections_while_installed_only(self):
        clock = measure.GcClock()
        with clock:
            _Cycle()
            gc.collect()
        self.assertGreater(clock.seconds, 0.0)
        self.assertEqual(1, clock.collections[2])
        self.assertNotIn(clock._callback, gc.callbacks)
        seconds = clock.seconds
        gc.collect()
        self.assertEqual(seconds, clock.seconds)
        self.assertEqual([0, 0, 1], clock.collections)


class _Stats(object):
    def __init__(self):
        self.counts = {'served': 0, 'rendered': 0}

    def snapshot(self):
        return dict(self.counts)


class _Selector(object):
    def __init__(self):
        self.stats = _Stats()


class _Response(object):
    status_code = 200


class _Api(object):
    """Answers as the index would; records the full collections so far.

    :param renders: whether nova_ext renders (else FAST and CACHED
        requests count as handed back to Nova).
    """

    def __init__(self, selector, renders=True):
        self.selector = selector
        self.renders = renders
        self.full_collections = []

    def api_request(self, url, check_response_status=None):
        self.full_collections.append(gc.get_stats()[2]['collections'])
        self.selector.stats.counts['served'] += 1
        self.selector.stats.counts['rendered'] += int(self.renders)
        return _Response()


def _call(api, selector):
    return functools.partial(listcloud.path_call,
                             {'admin': api, 'project': api}, selector)


class FrozenHeap(fixtures.Fixture):
    """The test process's heap so far left out of every collection.

    The benchmark collects the heap before each request it times; in a
    test runner that imported Nova and every test module, each full
    collection walks millions of objects that none of these tests made.
    Frozen (gc.freeze), they are not walked, nor found by gc.get_objects:
    a test's own objects are made after this fixture is in use.
    """

    def _setUp(self):
        gc.freeze()
        self.addCleanup(gc.unfreeze)


class _Collecting(base.TestCase):
    """Runs the benchmark's rounds, which collect before each request."""

    def setUp(self):
        super().setUp()
        self.useFixture(FrozenHeap())


class TestTimeCollectsBetweenRequests(_Collecting):

    def test_each_request_starts_from_a_collected_heap(self):
        selector = _Selector()
        api = _Api(selector)
        ms, fallbacks, gc_ms = listtime.in_process(
            listquery.QUERIES, listquery.PATHS, _call(api, selector),
            warmup=1, repeat=1)
        requests = len(listquery.QUERIES) * len(listquery.PATHS) * 2
        self.assertEqual(requests, len(api.full_collections))
        # A full collection ran before every request, outside its timing.
        steps = [b - a for a, b in zip(api.full_collections,
                                       api.full_collections[1:])]
        self.assertTrue(all(step >= 1 for step in steps), steps)
        self.assertEqual(set(listquery.PATHS),
                         set(ms[listquery.HEADLINE]))
        self.assertEqual(0, sum(fallbacks.values()))
        self.assertEqual(set(gc_ms[listquery.HEADLINE]), set(listquery.PATHS))


class TestRoundOrder(_Collecting):

    def test_queries_take_a_new_order_each_round(self):
        rounds = 3

        def made():
            calls = []

            def call(path, query):
                calls.append((path, query.name))
                return _Response(), True
            listtime.rounds(listquery.QUERIES, ('a', 'b'), call, warmup=1,
                            repeat=rounds - 1)
            return calls

        first_run = made()
        per_round = 2 * len(listquery.QUERIES)
        orders = []
        for n in range(rounds):
            made_now = first_run[n * per_round:(n + 1) * per_round]
            # Every query through both paths, each path after the other
            # in turn, once per round.
            self.assertEqual(
                sorted((p, q.name) for q in listquery.QUERIES
                       for p in 'ab'), sorted(made_now))
            first = 'b' if n % 2 == 0 else 'a'
            self.assertEqual({first}, {p for p, _ in made_now[::2]})
            orders.append(tuple(q for _, q in made_now[::2]))
        # Not one fixed order: the headline query does not sit at the same
        # place in every round, where a periodic check could meet it
        # every time, or never.
        self.assertGreater(
            len({order.index(listquery.HEADLINE) for order in orders}), 1)
        # The same orders in every run, to compare runs.
        self.assertEqual(first_run, made())


class _Health(object):
    """A CellHealth, as far as a benchmark child uses it."""

    def __init__(self):
        self.checks = 0


class _CheckingApi(_Api):
    """Counts a check in each request."""

    def __init__(self, selector, health):
        super().__init__(selector)
        self.health = health

    def api_request(self, url, check_response_status=None):
        self.health.checks += 1
        return super().api_request(url, check_response_status)


class _WatchingApi(_Api):
    """Writes, for each request, whether ``pid`` was stopped, to ``path``.

    To a file: the requests are made in forked children.
    """

    def __init__(self, selector, pid, path):
        super().__init__(selector)
        self.pid = pid
        self.path = path

    def api_request(self, url, check_response_status=None):
        with open(self.path, 'a') as seen:
            seen.write('T\n' if quiet.state(self.pid) == {'T'} else 'R\n')
        return super().api_request(url, check_response_status)


class TestIsolated(_Collecting):
    """Each index path and the bare reference in forked children."""

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        self.engine = sa.create_engine(
            'sqlite:///%s' % os.path.join(tmp, 'index.sqlite'))
        self.addCleanup(self.engine.dispose)
        table = source.INSTANCES
        table.create(self.engine)
        with self.engine.begin() as conn:
            for n in range(3):
                conn.execute(table.insert().values(
                    uuid=uuidutils.generate_uuid(), deleted=0,
                    created_at=datetime.datetime(2026, 1, 1 + n)))
        self.selector = _Selector()

    #: Two queries are enough, and each request costs a full collection.
    QUERIES = listquery.QUERIES[:2]

    def _isolated(self, api, processes=2, repeat=2):
        # As a cloud of the benchmark times them, one child at a time.
        jobs, timeout = listtime.child_jobs(
            self.QUERIES, listquery.INDEXED, _call(api, self.selector),
            self.engine, warmup=1, repeat=repeat, limit=1000)
        usage = collections.Counter()
        runs = isolate.in_processes(jobs, processes, timeout, usage)
        return listtime.pooled(self.QUERIES, listquery.INDEXED, runs) + (
            usage,)

    def test_every_sample_comes_from_a_child(self):
        api = _Api(self.selector)
        ms, fallbacks, gc_ms, bare, per_process, usage = self._isolated(api)
        # The requests were made, and counted, in the children only.
        self.assertEqual([], api.full_collections)
        self.assertEqual({'served': 0, 'rendered': 0},
                         self.selector.stats.snapshot())
        self.assertEqual({q.name for q in self.QUERIES}, set(ms))
        for query in self.QUERIES:
            self.assertEqual(set(listquery.INDEXED), set(ms[query.name]))
            for path in listquery.INDEXED:
                # Two processes of two timed rounds each, pooled.
                self.assertEqual(4, ms[query.name][path]['n'])
                self.assertEqual(4, gc_ms[query.name][path]['n'])
                self.assertEqual(2, len(per_process[path][query.name]))
        self.assertEqual(0, sum(fallbacks.values()))
        # One bare sample beside each timed request, in the same child:
        # 2 queries x 2 rounds x 2 children per path.
        self.assertEqual(8 * len(listquery.INDEXED), bare['ms']['n'])
        for path in listquery.INDEXED:
            self.assertEqual(8, bare['by_path'][path]['n'])
            self.assertEqual(2, len(bare['per_process'][path]))
        self.assertEqual(3, bare['rows'])
        self.assertGreater(bare['bytes'], 0)
        self.assertGreater(usage['wall'], 0.0)
        self.assertGreaterEqual(usage['parent_cpu'], 0.0)

    def test_the_cell_checks_are_counted_per_request(self):
        health = _Health()
        api = _CheckingApi(self.selector, health)
        path = listquery.CACHED
        jobs, timeout = listtime.child_jobs(
            self.QUERIES, (path,), _call(api, self.selector), self.engine,
            warmup=1, repeat=2, limit=1000, cell_health=health)
        runs = isolate.in_processes(jobs, 2, timeout)
        # 2 queries x 4 rounds (2 untimed) per child, the bare samples not
        # counted; each request made one check here.
        self.assertEqual({path: {'checks': 16, 'requests': 16}},
                         listtime.cell_checks((path,), runs))
        # Without a CellHealth the children count nothing.
        jobs, timeout = listtime.child_jobs(
            self.QUERIES, (path,), _call(_Api(self.selector), self.selector),
            self.engine, warmup=1, repeat=1, limit=1000)
        self.assertEqual({}, listtime.cell_checks(
            (path,), isolate.in_processes(jobs, 1, timeout)))

    def test_a_child_stops_the_others_for_its_timed_rounds_only(self):
        busy = _busy_process(self)
        seen = os.path.join(self.useFixture(fixtures.TempDir()).path, 'seen')
        api = _WatchingApi(self.selector, busy.pid, seen)
        path = listquery.CACHED
        jobs, timeout = listtime.child_jobs(
            self.QUERIES, (path,), _call(api, self.selector), self.engine,
            warmup=1, repeat=2, limit=1000, others=[busy.pid])
        runs = isolate.in_processes(jobs, 1, timeout)
        # 2 untimed rounds (one more than asked, see child_jobs), then 2
        # timed, of 2 queries each.
        with open(seen) as lines:
            self.assertEqual(['R'] * 4 + ['T'] * 4, lines.read().split())
        self.assertTrue(runs[path][0]['alone'])
        self.assertEqual({path: [1, 1]}, listtime.alone((path,), runs))
        self.assertNotIn('T', quiet.state(busy.pid))
        # Asked to stop none, a child says nothing of it.
        jobs, timeout = listtime.child_jobs(
            self.QUERIES, (path,), _call(_Api(self.selector), self.selector),
            self.engine, warmup=1, repeat=1, limit=1000)
        self.assertEqual({}, listtime.alone(
            (path,), isolate.in_processes(jobs, 1, timeout)))

    def test_in_child_runs_in_each_child_before_its_requests(self):
        log = os.path.join(self.useFixture(fixtures.TempDir()).path, 'log')
        inner = _call(_Api(self.selector), self.selector)

        def write(what):
            with open(log, 'a') as lines:
                lines.write('%d %s\n' % (os.getpid(), what))

        def call(path, query):
            write('request')
            return inner(path, query)

        path = listquery.CACHED
        jobs, timeout = listtime.child_jobs(
            self.QUERIES, (path,), call, self.engine, warmup=1, repeat=1,
            limit=1000, in_child=functools.partial(write, 'in_child'))
        isolate.in_processes(jobs, 2, timeout)
        with open(log) as lines:
            seen = [line.split() for line in lines]
        by_pid = collections.defaultdict(list)
        for pid, what in seen:
            by_pid[int(pid)].append(what)
        self.assertEqual(2, len(by_pid))
        self.assertNotIn(os.getpid(), by_pid)
        # 2 queries x 3 rounds (2 untimed) in each child, after in_child.
        for whats in by_pid.values():
            self.assertEqual(['in_child'] + ['request'] * 6, whats)

    def test_a_child_opens_its_own_database_connections(self):
        with self.engine.connect() as conn:
            conn.execute(sa.text('SELECT 1'))
        self.assertEqual(1, self.engine.pool.checkedin())
        memory = sa.create_engine('sqlite://')
        self.addCleanup(memory.dispose)
        with memory.begin() as conn:
            conn.execute(sa.text('CREATE TABLE kept (id INTEGER)'))

        def child():
            listtime.fresh_process()
            with memory.connect() as conn:
                kept = conn.execute(sa.text('SELECT COUNT(*) FROM kept'))
                return [self.engine.pool.checkedin(), kept.scalar()]

        # The file's pooled connection is forgotten; the in-memory
        # database, which lives in its connection, is kept.
        self.assertEqual([0, 0], isolate.call(child, timeout=60))
        self.assertEqual(1, self.engine.pool.checkedin())

    def test_a_child_never_frees_its_parents_sqlite_handles(self):
        with self.engine.connect() as conn:
            conn.execute(sa.text('SELECT 1'))
            raw = conn.connection.dbapi_connection

        def child():
            listtime.fresh_process()
            gc.collect()
            # The pool forgot it; the child still holds it, unfreed.
            return [self.engine.pool.checkedin(),
                    any(obj is raw for obj in listtime._INHERITED)]

        self.assertEqual([0, True], isolate.call(child, timeout=60))
        self.assertEqual([], listtime._INHERITED)

    def test_fallbacks_counted_in_the_children_come_back(self):
        api = _Api(self.selector, renders=False)
        fallbacks = self._isolated(api, processes=3, repeat=1)[1]
        # Every request of FAST and CACHED in each of three processes (two
        # warm-ups, as a child has one more, and one timed); none of INDEX.
        for query in self.QUERIES:
            self.assertEqual(9, fallbacks['%s (%s)' % (
                query.name, listquery.FAST)])
            self.assertEqual(9, fallbacks['%s (%s)' % (
                query.name, listquery.CACHED)])
            self.assertEqual(0, fallbacks['%s (%s)' % (
                query.name, listquery.INDEX)])

    def test_first_answers_come_back_byte_for_byte_from_a_child_each(self):
        body = '{"name": "caf\u00e9 \u2603"}'.encode('utf-8') + b'\xff'
        calls = []

        def call(path, query):
            calls.append(path)
            response = _Response()
            response.content = body + path.encode('ascii')
            return response, path != listquery.FAST

        got, wants = listanswers.first_answers(self.QUERIES,
                                               listquery.INDEXED, call)
        self.assertEqual({}, wants)
        # Made in the children only.
        self.assertEqual([], calls)
        self.assertEqual({(q.name, p) for q in self.QUERIES
                          for p in listquery.INDEXED}, set(got))
        for (name, path), (response, served, ms) in got.items():
            self.assertEqual(200, response.status_code)
            self.assertEqual(body + path.encode('ascii'), response.content)
            self.assertEqual(path != listquery.FAST, served)
            self.assertGreaterEqual(ms, 0.0)
