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
"""The notes below nova-ext-bench list's table, and the GC clock."""

import gc

from nova_ext.bench import listing
from nova_ext.bench import measure
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

    def test_time_in_the_collector_per_path(self):
        cloud = _cloud(40.0, 100.0)
        cloud['gc_ms'] = {q.name: {p: {'median': 1.0, 'max': 2.0}
                                   for p in listing.PATHS}
                          for q in listing.QUERIES}
        cloud['gc_ms'][listing.HEADLINE][listing.STOCK] = {
            'median': 700.0, 'max': 1500.0}
        cloud['live_objects'] = 1921000
        notes = listing._notes({2: cloud}, [2])
        self.assertEqual(
            '2 cells, detail admin: median (max) ms in the garbage '
            'collector inside each request: stock 700.0 (1500), index 1.0 '
            '(2), fast 1.0 (2), cached 1.0 (2); 1921000 live objects in '
            'the process.', notes[1])


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
    """Answers as the index would; records the full collections so far."""

    def __init__(self, selector):
        self.selector = selector
        self.full_collections = []

    def api_request(self, url, check_response_status=None):
        self.full_collections.append(gc.get_stats()[2]['collections'])
        self.selector.stats.counts['served'] += 1
        self.selector.stats.counts['rendered'] += 1
        return _Response()


class TestTimeCollectsBetweenRequests(base.TestCase):

    def test_each_request_starts_from_a_collected_heap(self):
        selector = _Selector()
        api = _Api(selector)
        apis = {'admin': api, 'project': api}
        ms, fallbacks, gc_ms = listing._time(apis, selector, repeat=1)
        requests = len(listing.QUERIES) * len(listing.PATHS) * (
            listing.WARMUP_REQUESTS)
        self.assertEqual(requests, len(api.full_collections))
        # A full collection ran before every request, outside its timing.
        steps = [b - a for a, b in zip(api.full_collections,
                                       api.full_collections[1:])]
        self.assertTrue(all(step >= 1 for step in steps), steps)
        self.assertEqual(set(listing.PATHS),
                         set(ms[listing.HEADLINE]))
        self.assertEqual(0, sum(fallbacks.values()))
        self.assertEqual(set(gc_ms[listing.HEADLINE]), set(listing.PATHS))
