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
"""nova-compute's startup links: when they run, and only there."""

import fixtures

from nova_ext.seams import compute
from nova_ext.tests import fixtures as ext_fixtures
from nova_ext.tests.unit import base


class _Clock(object):
    """A clock that moves only when slept on."""

    def __init__(self):
        self.now = 0.0
        self.slept = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


class TestStartup(base.TestCase):

    def setUp(self):
        super().setUp()
        self.runs = []
        self.useFixture(fixtures.MonkeyPatch(
            'nova_ext.seams.compute.run_for_host', self._run))
        self.useFixture(fixtures.MonkeyPatch(
            'nova_ext.seams.compute._THREAD', None))
        self.failures = 0

    def _run(self, context, conf, host):
        self.runs.append(host)
        if self.failures:
            self.failures -= 1
            raise RuntimeError('conductor not there yet')
        return {}

    def _as_nova_compute(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova.db.main.api.DISABLE_DB_ACCESS', True))
        self.useFixture(fixtures.MonkeyPatch(
            'nova.objects.base.NovaObject.indirection_api', object()))

    def test_off_by_default(self):
        self.assertIsNone(compute.attach(self.conf.conf))

    def test_one_thread_per_process(self):
        self.flags(run_at_startup=True, group='nova_ext_object_migrations')
        self.useFixture(fixtures.MonkeyPatch(
            'nova_ext.seams.compute.STARTUP_WAIT', 0.0))
        first = compute.attach(self.conf.conf)
        self.assertIs(first, compute.attach(self.conf.conf))
        first.join(5)
        self.assertFalse(first.is_alive())

    def test_other_processes_run_nothing(self):
        clock = _Clock()
        compute._when_started(self.conf.conf, wait=10.0, clock=clock,
                              sleep=clock.sleep)
        self.assertEqual([], self.runs)
        self.assertEqual(10.0, clock.now)

    def test_nova_compute_links_its_host_retrying(self):
        self.flags(host='cmp-7')
        self._as_nova_compute()
        self.failures = 2
        clock = _Clock()
        compute._when_started(self.conf.conf, wait=10.0, clock=clock,
                              sleep=clock.sleep)
        self.assertEqual(['cmp-7'] * 3, self.runs)
        self.assertEqual([compute.RETRY_INTERVAL] * 2, clock.slept)

    def test_untested_nova_runs_nothing(self):
        self._as_nova_compute()
        self.useFixture(ext_fixtures.UntestedNova())
        log = self.useFixture(fixtures.FakeLogger(level='ERROR'))
        clock = _Clock()
        compute._when_started(self.conf.conf, wait=10.0, clock=clock,
                              sleep=clock.sleep)
        self.assertEqual([], self.runs)
        self.assertEqual([], clock.slept)
        self.assertIn('DISABLE_DB_ACCESS was tested with nova', log.output)
