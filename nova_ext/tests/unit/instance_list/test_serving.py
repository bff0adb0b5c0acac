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
"""The Selector: which answers come from the driver, which from Nova."""

import subprocess
import sys
import textwrap
import threading
import time
from unittest import mock

import fixtures
from nova.compute import instance_list as nova_instance_list
from nova import exception as nova_exception

from nova_ext.instance_list import base as list_base
from nova_ext.instance_list import cells
from nova_ext.instance_list import serving
from nova_ext.seams import api as api_entry_point
from nova_ext.tests.unit import base


class ScriptedDriver(list_base.InstanceListDriver):
    """Answers, raises, or takes time, as each test scripts it."""

    name = 'scripted'

    def __init__(self, clock):
        self.clock = clock
        self.calls = []
        self.error = None
        self.duration = 0.0
        self.reported = []
        self.probed = None

    def get_instance_objects_sorted(self, ctx, filters, limit, marker,
                                    expected_attrs, sort_keys, sort_dirs,
                                    cell_down_support=False):
        self.calls.append(filters)
        # The driver may change what it is given; Nova must not see that.
        filters['mangled'] = True
        self.clock.now += self.duration
        if self.error is not None:
            raise self.error
        return 'from-driver', []

    def report_stats(self, counts):
        self.reported.append(counts)

    def probe(self):
        if isinstance(self.probed, list):
            return self.probed.pop(0)
        return self.probed


class TestSelector(base.TestCase):

    def setUp(self):
        super().setUp()
        self.flags(retry_interval=60, group='nova_ext_instance_list')
        self.flags(query_timeout=5, group='nova_ext_index')
        self.clock = base.Clock()
        self.driver = ScriptedDriver(self.clock)
        self.stock_calls = []
        self.selector = serving.Selector(self.conf.conf, self.stock,
                                         clock=self.clock)
        self.selector._driver = self.driver
        self.logs = self.useFixture(fixtures.FakeLogger(
            name='nova_ext.instance_list.serving'))

    def stock(self, ctx, filters, *args, **kwargs):
        self.stock_calls.append(dict(filters))
        return 'from-nova', []

    def list(self, filters=None):
        filters = {'project_id': 'p'} if filters is None else filters
        return self.selector.get_instance_objects_sorted(
            None, filters, 10, None, ['metadata'], ['created_at'], ['desc'])

    def counts(self):
        return self.selector.stats.snapshot()

    def test_served(self):
        self.assertEqual(('from-driver', []), self.list())
        self.assertEqual(1, self.counts()['served'])
        self.assertEqual([], self.stock_calls)

    def test_unservable_goes_to_nova_without_latching(self):
        self.driver.error = list_base.Unservable('regex')
        filters = {'project_id': 'p'}
        self.assertEqual(('from-nova', []), self.list(filters))
        self.assertEqual([{'project_id': 'p'}], self.stock_calls)
        self.driver.error = None
        self.assertEqual(('from-driver', []), self.list())
        self.assertEqual(1, self.counts()['unservable'])

    def test_unavailable_latches_with_one_warning_then_retries(self):
        self.driver.error = list_base.Unavailable('db down')
        for _ in range(3):
            self.assertEqual(('from-nova', []), self.list())
        self.assertEqual(1, len(self.driver.calls))
        self.assertEqual((1, 2), (self.counts()['unavailable'],
                                  self.counts()['latched']))
        self.assertEqual(1, self.logs.output.count('is off for 60 s'))
        self.driver.error = None
        self.clock.now += 61
        self.assertEqual(('from-driver', []), self.list())

    def test_a_client_error_is_novas_to_give_without_latching(self):
        self.driver.error = nova_exception.MarkerNotFound(marker='m')
        self.assertEqual(('from-nova', []), self.list())
        self.driver.error = None
        self.assertEqual(('from-driver', []), self.list())
        self.assertEqual(1, self.counts()['failed'])

    def test_a_bug_in_the_driver_latches(self):
        self.driver.error = KeyError('boom')
        self.assertEqual(('from-nova', []), self.list())
        self.assertEqual(('from-nova', []), self.list())
        self.assertEqual(1, len(self.driver.calls))

    def test_slow_answer_is_used_once_then_latched(self):
        self.driver.duration = 6.0
        self.assertEqual(('from-driver', []), self.list())
        self.assertEqual(('from-nova', []), self.list())
        self.assertEqual(1, self.counts()['slow'])

    def test_slow_store_latches(self):
        # The probe takes more than a tenth of query_timeout (and 0.1 s).
        self.driver.duration, self.driver.probed = 6.0, 0.6
        self.assertEqual(('from-driver', []), self.list())
        self.assertEqual(('from-nova', []), self.list())
        self.assertEqual(1, self.counts()['slow'])

    def test_one_slow_probe_is_asked_again(self):
        # A pause of the process (a collection) slowed the first probe; the
        # second says the store is quick, and the driver stays on.
        self.driver.duration, self.driver.probed = 6.0, [0.6, 0.01, 0.01]
        self.assertEqual(('from-driver', []), self.list())
        self.assertEqual(('from-driver', []), self.list())
        self.assertEqual(0, self.counts()['latched'])
        self.assertEqual([], self.driver.probed)
        # Slow twice: the store is, and the driver is switched off.
        self.driver.probed = [0.6, 0.7]
        self.clock.now += 1
        self.assertEqual(('from-driver', []), self.list())
        self.assertEqual(('from-nova', []), self.list())
        self.assertEqual(1, self.counts()['latched'])

    def test_slow_request_of_a_quick_store_does_not_latch(self):
        self.driver.duration, self.driver.probed = 6.0, 0.01
        for _ in range(3):
            self.assertEqual(('from-driver', []), self.list())
        self.assertEqual((3, 0), (self.counts()['slow'],
                                  self.counts()['latched']))
        self.assertIn("that request's own query is slow",
                      self.counts()['last_reason'])
        self.assertNotIn('is off', self.logs.output)

    def test_counters_published_at_most_every_interval(self):
        self.flags(api_counters_interval=30, group='nova_ext_metrics')
        self.list()
        self.list()
        self.selector.wait_reported(5)
        self.assertEqual(1, len(self.driver.reported))
        self.clock.now += 20
        self.list()
        self.selector.wait_reported(5)
        self.assertEqual(1, len(self.driver.reported))
        self.clock.now += 10
        self.list()
        self.selector.wait_reported(5)
        self.assertEqual(2, len(self.driver.reported))
        self.assertEqual(4, self.driver.reported[-1]['served'])

    def test_a_list_does_not_wait_for_its_counters(self):
        # Another writer holds the index: publishing waits, the list not.
        held = threading.Event()
        self.addCleanup(held.set)
        published = []
        self.driver.report_stats = lambda counts: (
            held.wait(30), published.append(counts))
        self.assertEqual(('from-driver', []), self.list())
        self.clock.now += self.selector.report_interval
        # Both lists answered while the first publication still waits; the
        # counters published last are those of both.
        self.assertEqual(('from-driver', []), self.list())
        self.assertEqual([], published)
        held.set()
        self.selector.wait_reported(5)
        self.assertEqual(2, published[-1]['served'])

    def test_a_publication_that_failed_is_made_again(self):
        self.flags(api_counters_interval=1.0, group='nova_ext_metrics')
        self.selector.clock = time.monotonic
        real, failures = self.driver.report_stats, []

        def fails_once(counts):
            if not failures:
                failures.append(counts)
                raise RuntimeError('the index is away')
            real(counts)
        self.driver.report_stats = fails_once
        self.list()
        deadline = time.monotonic() + 10
        while not self.driver.reported:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.01)
        self.assertEqual([1], [c['served'] for c in failures])
        self.assertEqual([1], [c['served'] for c in self.driver.reported])

    def test_the_last_counters_are_published_without_another_request(self):
        self.flags(api_counters_interval=1.0, group='nova_ext_metrics')
        self.selector.clock = time.monotonic
        self.list()
        self.selector.wait_reported(5)
        self.assertEqual([1], [c['served'] for c in self.driver.reported])
        # Within the interval: not published now, and no request follows.
        self.list()
        self.selector.wait_reported(5)
        self.assertEqual([1], [c['served'] for c in self.driver.reported])
        deadline = time.monotonic() + 10
        while len(self.driver.reported) < 2:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.01)
        self.assertEqual([1, 2], [c['served'] for c in self.driver.reported])

    def test_a_process_exits_while_its_counters_cannot_be_published(self):
        # The publication fails, and its loop tries again every interval
        # while the process exits: the exit must not wait for it.
        script = textwrap.dedent("""
            from oslo_config import cfg
            from nova_ext.conf import metrics
            from nova_ext.instance_list import serving

            class Gone(object):
                name = 'gone'

                def report_stats(self, counts):
                    raise RuntimeError('the index database is gone')

            conf = cfg.ConfigOpts()
            metrics.register_opts(conf)
            selector = serving.Selector(conf, None)
            selector._driver = Gone()
            selector.stats.add('served')
            selector.report()
            selector.wait_reported(10)
            print('published:', not selector._dirty)
            """)
        done = subprocess.run([sys.executable, '-c', script],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(0, done.returncode, done.stderr)
        self.assertEqual('published: False\n', done.stdout)

    def test_cells_driver_is_novas_path(self):
        self.driver.name = 'cells'
        self.assertEqual(('from-nova', []), self.list())
        self.assertEqual([], self.driver.calls)


class TestAttempt(TestSelector):
    """attempt(): what nova_ext's own renderer runs the driver through."""

    def test_served(self):
        self.assertEqual((True, 'page'),
                         self.selector.attempt(self.driver, lambda: 'page'))
        self.assertEqual(1, self.selector.stats.snapshot()['served'])

    def test_declined_latched_and_failed(self):
        def raise_(error):
            def call():
                raise error
            return call
        self.assertEqual((False, None), self.selector.attempt(
            self.driver, raise_(list_base.Unservable('a regex'))))
        self.assertEqual((False, None), self.selector.attempt(
            self.driver, raise_(nova_exception.MarkerNotFound(marker='m'))))
        # A bad marker is the caller's error: not latched.
        self.assertIsNone(self.selector.latched_until)
        self.assertEqual((False, None), self.selector.attempt(
            self.driver, raise_(list_base.Unavailable('down'))))
        self.assertEqual((False, None),
                         self.selector.attempt(self.driver, lambda: 'page'))
        counts = self.selector.stats.snapshot()
        self.assertEqual((1, 1, 1, 1, 0), (
            counts['unservable'], counts['failed'], counts['unavailable'],
            counts['latched'], counts['served']))

    def test_reasons_counted_by_kind(self):
        def unservable(reason):
            def call():
                raise list_base.Unservable(reason)
            return call
        for reason in ('3 captured changes not recorded in the index yet',
                       '12 captured changes not recorded in the index yet',
                       'marker 0d5b8c1e-6f8a-4b3e-9a8c-2b7e4e1f0a11 is not '
                       'in the index yet'):
            self.selector.attempt(self.driver, unservable(reason))
        self.selector.attempt(self.driver, unservable('a regex'))
        self.assertEqual({'unservable': {
            'N captured changes not recorded in the index yet': 2,
            'marker N is not in the index yet': 1,
            'a regex': 1}}, self.selector.stats.snapshot()['reasons'])

    def test_reasons_bounded(self):
        stats = serving.Stats()
        for i in range(stats.MAX_REASONS + 5):
            stats.add('failed', 'Error %s' % chr(ord('A') + i))
        stats.add('failed', 'Error A')
        reasons = stats.snapshot()['reasons']['failed']
        self.assertEqual(stats.MAX_REASONS + 1, len(reasons))
        self.assertEqual((2, 5), (reasons['Error A'], reasons['other']))

    def test_stock_only_skips_the_driver_uncounted(self):
        with self.selector.stock_only():
            self.assertEqual(('from-nova', []), self.list())
        self.assertEqual([], self.driver.calls)
        self.assertEqual(0, sum(
            v for k, v in self.selector.stats.snapshot().items()
            if k not in ('last_reason', 'reasons')))
        # Outside, the driver answers again.
        self.assertEqual(('from-driver', []), self.list())


class TestAttached(base.TestCase):
    """What the API seam records here, and who reads it."""

    def setUp(self):
        super().setUp()
        self.flags(driver='index', group='nova_ext_instance_list')
        api_entry_point.detach_instance_list()
        self.addCleanup(api_entry_point.detach_instance_list)

    def test_nothing_attached(self):
        self.assertIsNone(serving.selector())
        self.assertIs(nova_instance_list.get_instance_objects_sorted,
                      serving.stock())

    def test_the_seam_records_its_selector_and_novas_function(self):
        novas = nova_instance_list.get_instance_objects_sorted
        selector = api_entry_point.attach_instance_list(self.conf.conf)
        self.assertIs(selector, serving.selector())
        self.assertIs(novas, serving.stock())
        self.assertIsNot(novas, nova_instance_list.get_instance_objects_sorted)
        # Attached again, as by a second paste load: Nova's function stays
        # the stock one.
        again = api_entry_point.attach_instance_list(self.conf.conf)
        self.assertIs(again, serving.selector())
        self.assertIs(novas, serving.stock())
        with api_entry_point.stock_instance_list():
            self.assertIsNone(serving.selector())
            self.assertIs(novas,
                          nova_instance_list.get_instance_objects_sorted)
        self.assertIs(again, serving.selector())
        api_entry_point.detach_instance_list()
        self.assertIsNone(serving.selector())
        self.assertIs(novas, nova_instance_list.get_instance_objects_sorted)

    def test_the_cells_driver_calls_novas_function(self):
        novas = mock.Mock(return_value=('from-nova', []))
        self.useFixture(fixtures.MonkeyPatch(
            'nova.compute.instance_list.get_instance_objects_sorted', novas))
        # Detached before Nova's function is put back.
        self.addCleanup(api_entry_point.detach_instance_list)
        api_entry_point.attach_instance_list(self.conf.conf)
        self.assertEqual(('from-nova', []),
                         cells.CellsDriver().get_instance_objects_sorted(
                             'ctx', {}, 1, None, [], ['uuid'], ['asc']))
        novas.assert_called_once_with('ctx', {}, 1, None, [], ['uuid'],
                                      ['asc'], cell_down_support=False)
