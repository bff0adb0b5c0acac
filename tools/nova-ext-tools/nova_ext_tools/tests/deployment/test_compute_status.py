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
"""Compute status traits in the real cloud, across processes and clocks.

The os-services API of nova_ext's nova-api (uwsgi workers, each with its
own ``service.update`` consumer) and Nova's own compute RPC put the status
traits into placement; a compute killed as a crashed host is marked down
by watchers in processes of their own, one of them on a host whose clock
is behind by more than ``service_down_time``, and none takes back
another's right mark; the real scheduler asks placement without the down
compute; forced down and up again once marked, it stays marked although
Nova's servicegroup API, whose window is longer, still takes it for up;
the compute started again loses the mark. A live compute forced up loses
the mark at its next heartbeat, taken off by the consumer.
"""

import os
import signal
import time

from nova_ext_tools.cloud import clock
from nova_ext_tools.cloud import nova as cloud_nova
from nova_ext_tools.cloud import services
from nova_ext_tools.tests.deployment import base

DOWN = 'CUSTOM_COMPUTE_STATUS_DOWN'
DISABLED = 'COMPUTE_STATUS_DISABLED'
#: Nova's own microversion for service ids that are uuids and forced_down.
SERVICES_VERSION = '2.53'
#: The watchers' window and sweep interval: short, so that the test waits
#: seconds rather than minutes; the same for both, as one nova.conf gives.
DOWN_TIME = 20
INTERVAL = 3
#: Behind by more than DOWN_TIME: Nova's servicegroup API on that host
#: takes a heartbeat 10 to 50 s old for a recent one.
BEHIND = '-30s'
CLOUD_WATCHER = 'nova-ext-status-watcher'
WATCHERS = {'nova-ext-status-watcher-on-time': None,
            'nova-ext-status-watcher-behind': BEHIND}
#: How long a right mark must then hold: past the behind watcher's sweeps.
HOLD = 12


class TestComputeStatus(base.CloudTestCase):

    def setUp(self):
        super().setUp()
        self.admin = self.connect('admin')
        hypervisors = self._compute(
            'GET', '/os-hypervisors/detail').json()['hypervisors']
        #: {host: its root provider's uuid}: the compute node's uuid.
        self.providers = {h['service']['host']: h['id'] for h in hypervisors}
        self.services = {s['host']: s['id'] for s in self._compute(
            'GET', '/os-services?binary=nova-compute').json()['services']}
        self.hosts = sorted(self.services)
        self.assertEqual(self.hosts, sorted(self.providers))
        self.assertEqual(2, len(self.hosts))
        self.assertEqual({h: set() for h in self.hosts}, self._status())

    def _compute(self, method, url, **kwargs):
        r = self.admin.compute.request(url, method, headers={
            'OpenStack-API-Version': 'compute %s' % SERVICES_VERSION},
            **kwargs)
        self.assertLess(r.status_code, 300, r.text)
        return r

    def _put_service(self, host, body):
        self._compute('PUT', '/os-services/%s' % self.services[host],
                      json=body)

    def _status(self):
        """{host: the status traits its provider carries}."""
        found = {}
        for host, rp in self.providers.items():
            r = self.admin.placement.get(
                '/resource_providers/%s/traits' % rp,
                headers={'OpenStack-API-Version': 'placement 1.6'})
            found[host] = {t for t in r.json()['traits']
                           if t in (DOWN, DISABLED)}
        return found

    def _until(self, what, wanted, timeout, seen=None):
        """Poll the status traits until they are ``wanted``.

        Each look is appended to ``seen``.
        """
        deadline = time.monotonic() + timeout
        while True:
            now = self._status()
            if seen is not None:
                seen.append(now)
            if now == wanted:
                return
            if time.monotonic() > deadline:
                self.fail('%s: %s after %d s, wanted %s'
                          % (what, now, timeout, wanted))
            time.sleep(0.5)

    def test_os_services_reach_placement(self):
        first, second = self.hosts
        compute = cloud_nova.compute_process(
            {host: cell for cell, host, _d in base.cells(self.cloud)}[first])
        compute_log = len(self.log_of(compute))
        self._put_service(first, {'status': 'disabled'})
        # Nova's compute RPC, synchronous: there when the call returns.
        self.assertEqual({first: {DISABLED}, second: set()}, self._status())
        self._put_service(first, {'status': 'enabled'})
        self.assertEqual({first: set(), second: set()}, self._status())
        # The consumers left that trait to Nova's compute, whose writes
        # did not fail (a write of theirs at that moment made them fail).
        self.assertNotIn('An error occurred while updating',
                         self.log_of(compute)[compute_log:])
        # The consumer of the worker that answered, on its notification
        # thread.
        self._put_service(first, {'forced_down': True})
        self.addCleanup(self._put_service, first, {'forced_down': False})
        self._until('forced down', {first: {DOWN}, second: set()}, 30)
        api_log = len(self.log_of('nova-api'))
        self._put_service(first, {'forced_down': False})
        self._until('forced up', {first: set(), second: set()}, 30)
        # Taken off by the consumer once it saw a heartbeat, not left to
        # the watcher's next sweep.
        self.assertIn("provider %s traits +[] -['%s']"
                      % (self.providers[first], DOWN),
                      self.log_of('nova-api')[api_log:])
        self.assertEqual([], self.nova_ext_errors())

    def _start_watchers(self):
        # The cloud's own watcher makes way: watchers that disagree on
        # service_down_time disagree on what is down.
        self.cloud.ps.stop(CLOUD_WATCHER)
        self.addCleanup(self.cloud.ext.start_service, CLOUD_WATCHER)
        conf = os.path.join(self.cloud.nova.etc, 'status-watchers.conf')
        services.write_ini(conf, {
            'DEFAULT': {'service_down_time': str(DOWN_TIME)},
            'nova_ext_compute_status': {'watch_interval': str(INTERVAL)}})
        for name, offset in WATCHERS.items():
            self.cloud.ps.start(name, [
                services.venv_bin('nova-ext-status-watcher'),
                '--config-file', self.cloud.nova.conf, '--config-file', conf],
                env=dict(os.environ, **(clock.environ(offset) if offset
                                        else {})))
            self.addCleanup(self.cloud.ps.stop, name)

    def _boot(self):
        compute = self.admin.compute
        server = compute.create_server(
            name='status-down', image_id=self.resources['image'],
            flavor_id=compute.find_flavor('tiny').id, networks='none')
        self.addCleanup(compute.wait_for_delete, server)
        self.addCleanup(compute.delete_server, server)
        server = compute.wait_for_server(server)
        return server.compute_host

    def test_a_crashed_compute_marked_down_by_watchers_apart(self):
        live, dead = self.hosts
        name = cloud_nova.compute_process(
            {host: cell for cell, host, _d in base.cells(self.cloud)}[dead])
        self._start_watchers()
        # The watchers' first sweeps: they have seen every counter.
        time.sleep(2 * INTERVAL)
        self.cloud.ps.signal(name, signal.SIGKILL)
        self.addCleanup(self._compute_back, name)
        killed = time.monotonic()
        seen = []
        self._until('killed', {live: set(), dead: {DOWN}},
                    DOWN_TIME + 30, seen)
        marked = time.monotonic()
        # Forced down and up again: nova-api's servicegroup API, whose
        # window is nova.conf's service_down_time (60 s), still takes the
        # compute for up, as a host whose clock is behind would; its
        # consumers judge by the counter, and the mark holds.
        self._put_service(dead, {'forced_down': True})
        self.addCleanup(self._put_service, dead, {'forced_down': False})
        self._put_service(dead, {'forced_down': False})
        state = {s['host']: s['state'] for s in self._compute(
            'GET', '/os-services?binary=nova-compute').json()['services']}
        self.assertEqual('up', state[dead])
        # Through the window in which the behind watcher's servicegroup
        # API takes the compute for up: the mark holds.
        while time.monotonic() < marked + HOLD:
            seen.append(self._status())
            self.assertEqual({live: set(), dead: {DOWN}}, seen[-1],
                             '%.1f s after the kill'
                             % (time.monotonic() - killed))
            time.sleep(0.5)
        # No down mark before a full window on the watchers' clocks.
        self.assertGreaterEqual(marked - killed, DOWN_TIME - 10)
        self.assertTrue(all(not s[live] for s in seen), seen)
        placement_log = len(self.log_of('placement'))
        self.assertEqual(live, self._boot())
        # The real scheduler's query forbade the trait: nova_ext's request
        # filter, not Nova's ComputeFilter, which takes the compute for up
        # for service_down_time (60 s here) after its last heartbeat.
        queries = [line for line in
                   self.log_of('placement')[placement_log:].splitlines()
                   if '"GET /allocation_candidates?' in line]
        self.assertTrue(queries)
        self.assertTrue(all('!' + DOWN in line or '%21' + DOWN in line
                            for line in queries), queries)
        self._compute_back(name)
        self.assertEqual([], self.nova_ext_errors() + self.nova_ext_lines(
            'ERROR', list(WATCHERS)))

    def _compute_back(self, name):
        """The compute started again, and unmarked by the watchers."""
        if not self.cloud.ps.running(name):
            self.cloud.nova.restart(name)
            self.cloud.wait_for_computes()
            self._until('back', {h: set() for h in self.hosts}, 60)
