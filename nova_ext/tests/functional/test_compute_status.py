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
"""Compute status traits in Nova's multi-cell harness with real placement.

Heartbeats are Nova's own database writes; time moves with oslo's time
override, which Nova's servicegroup API reads and the watchers here are
given as their clock, so a stopped compute misses its heartbeats exactly
as in production.
"""

import datetime
import sys
import threading
import time

import fixtures

from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova import objects
from nova import servicegroup
from oslo_utils import timeutils

from nova_ext.compute_status import consumer as consumer_mod
from nova_ext.compute_status import engine
from nova_ext.compute_status import heartbeat
from nova_ext.compute_status import heartbeat_wait
from nova_ext.compute_status import trait_callbacks
from nova_ext.compute_status import watcher as watcher_mod
from nova_ext import exception
from nova_ext.notifications import dispatcher
from nova_ext.seams import scheduler as scheduler_ep
from nova_ext.tests.functional import base
from nova_ext.tests.functional import fixtures as func_fixtures

DISABLED = trait_callbacks.COMPUTE_STATUS_DISABLED
DOWN = trait_callbacks.COMPUTE_STATUS_DOWN
CONF = func_fixtures.CONF

CALLBACKS = {'trait_callbacks': ['compute-status']}


class _ComputeStatusBase(base.NovaExtTestCase):
    COMPUTES_PER_CELL = 3
    NOVA_EXT_OPTIONS = {'nova_ext_compute_status': CALLBACKS}
    #: The one compute left healthy when the others go down.
    HEALTHY = 'compute2-3'

    def setUp(self):
        super().setUp()
        # The harness's conductor and scheduler report their state with
        # contexts targeted at no cell, so each heartbeat goes to whichever
        # cell another thread has targeted at that moment (Nova's
        # CellDatabases fixture): there their service ids (1 and 2, in
        # cell1) are compute2-1's and compute2-2's, which are then up again
        # at the frozen time, stopped or not. No service of a cloud writes
        # another's row, and nothing here needs their heartbeats.
        for service in (self.conductor, self.scheduler):
            timers = list(service.tg.timers)
            service.tg.stop_timers()
            for timer in timers:
                timer.wait()
        self.t0 = timeutils.utcnow()
        timeutils.set_time_override(self.t0)
        self.addCleanup(timeutils.clear_time_override)
        self.down_time = CONF.service_down_time
        # What Nova's scheduler and API judge a compute by.
        self.servicegroup = servicegroup.API()

    def _at(self, seconds):
        timeutils.set_time_override(
            self.t0 + datetime.timedelta(seconds=seconds))

    def _service(self, host):
        ctxt = nova_context.get_admin_context()
        mapping = objects.HostMapping.get_by_host(ctxt, host)
        with nova_context.target_cell(ctxt, mapping.cell_mapping) as cctxt:
            return objects.Service.get_by_compute_host(cctxt, host)

    def _heartbeat(self, *hosts):
        # What nova.servicegroup.drivers.db._report_state writes.
        for host in hosts or self._running():
            service = self._service(host)
            service.report_count += 1
            service.save()

    def _running(self):
        return [h for h in sorted(self.computes) if h not in self.stopped]

    def _stop(self, *hosts):
        for host in hosts:
            service = self.computes[host]
            timers = list(service.tg.timers)
            service.stop()
            # Stopping a native timer does not wait for a heartbeat that
            # is already running; one that landed after the test moved
            # time on would count the compute as up.
            for timer in timers:
                timer.wait()
            self.stopped.add(host)

    def _watcher(self):
        # Its window is timed on the test's clock, which the test moves.
        return watcher_mod.Watcher(
            engine.TraitEngine.from_conf(CONF), self.down_time, 3600,
            clock=lambda: timeutils.utcnow().timestamp())

    def _traits(self, host):
        return set(self._get_provider_traits(
            self._get_provider_uuid_by_host(host)))

    def _marked(self, trait):
        return {h for h in self.computes if trait in self._traits(h)}

    def _boot(self, name, **kwargs):
        return self._create_server(name=name, networks='none',
                                   api=self.admin_api, **kwargs)

    def _all_but_healthy_down(self, watchers):
        """Stop every compute but HEALTHY and let the watchers see it."""
        down = set(self.computes) - {self.HEALTHY}
        self._stop(*sorted(down))
        # The watchers' windows start at their first look after the stop;
        # a heartbeat written after it (Nova's timer runs in the harness,
        # and a busy machine can delay a stopped compute's last one)
        # restarts them, as it should: then another window is waited out.
        for n in range(1, 4):
            for w in watchers:
                w.sweep()
            self._at(n * (self.down_time + 1))
            self._heartbeat()
            for w in watchers:
                w.sweep()
            if self._marked(DOWN) == down and not self._up_for_nova(down):
                return
        self.fail('computes %s stopped but not all marked down: %s; up for '
                  'Nova at %s: %s'
                  % (sorted(down), sorted(self._marked(DOWN)),
                     timeutils.utcnow(), self._up_for_nova(down)))

    def _up_for_nova(self, hosts):
        """{host: its last heartbeat} of ``hosts`` Nova takes for up."""
        services = {host: self._service(host) for host in hosts}
        return {host: str(service.last_seen_up)
                for host, service in services.items()
                if self.servicegroup.service_is_up(service)}

    def _setup_services(self):
        self.stopped = set()
        super()._setup_services()


class TestStockNovaNoValidHost(_ComputeStatusBase):
    """No nova_ext request filter: Nova's own behaviour."""

    #: What Nova's scheduler asks placement for a server of flavor 1 (with
    #: its own compute_status_filter and OWNER_NOVA request filters), at
    #: its microversion.
    CANDIDATES = ('/allocation_candidates?resources=DISK_GB:1,MEMORY_MB:512,'
                  'VCPU:1&root_required=OWNER_NOVA,!COMPUTE_STATUS_DISABLED')
    CANDIDATES_VERSION = '1.36'

    def setUp(self):
        super().setUp()
        # Placement does not shuffle allocation candidates by default, but
        # their order is a set's (of hashes of provider UUIDs) filled in
        # the order its query returned them, which differs between
        # queries: the compute left healthy is the one the scheduler's own
        # query lists last, so that a limit leaves it out on every run.
        self.HEALTHY = self._listed(None)[-1]

    def _listed(self, limit):
        """The hosts the scheduler's query lists, in placement's order."""
        uri = self.CANDIDATES + ('&limit=%d' % limit if limit else '')
        body = self.placement.get(uri, version=self.CANDIDATES_VERSION).body
        order = [list(request['allocations'])[0]
                 for request in body['allocation_requests']]
        host_of = {self._get_provider_uuid_by_host(host): host
                   for host in self.computes}
        if not limit:
            self.assertEqual(set(host_of), set(order))
        return [host_of[rp] for rp in order]

    def test_down_computes_exhaust_max_placement_results(self):
        self.flags(max_placement_results=2, group='scheduler')
        # The watcher runs and marks them, but nothing forbids the trait.
        self._all_but_healthy_down([self._watcher()])
        self.assertEqual(set(self.computes) - {self.HEALTHY},
                         self._marked(DOWN))
        # The test's premise, still: the limit leaves the healthy one out.
        self.assertNotIn(self.HEALTHY, self._listed(2))
        failed = self._boot('stock', expected_state='ERROR')
        self.assertIn('No valid host', failed['fault']['message'])
        # The cause is the limit: with room for every host, the
        # ComputeFilter finds the healthy one.
        self.flags(max_placement_results=10, group='scheduler')
        server = self._boot('stock-unlimited')
        self.assertEqual(self.HEALTHY, server['OS-EXT-SRV-ATTR:host'])


class TestComputeDown(_ComputeStatusBase):
    NOVA_EXT_OPTIONS = {
        'nova_ext_compute_status': CALLBACKS,
        'nova_ext_scheduler': {'request_filters': ['compute-disabled',
                                                   'compute-down']},
    }

    def test_build_lands_on_the_healthy_host(self):
        self.assertEqual(['compute-disabled', 'compute-down'],
                         scheduler_ep.attached())
        self.flags(max_placement_results=2, group='scheduler')
        self._all_but_healthy_down([self._watcher()])
        servers = [self._boot('ext-%d' % n) for n in range(2)]
        self.assertEqual({self.HEALTHY},
                         {s['OS-EXT-SRV-ATTR:host'] for s in servers})
        # Nova's compute_status_filter is there: compute-disabled stood by.
        self.assertIn('compute-disabled stands by', self.stdlog.logger.output)

    def test_watcher_waits_for_service_down_time_and_recovery(self):
        w = self._watcher()
        self._stop('compute1-1')
        w.sweep()
        self._at(self.down_time - 1)
        self._heartbeat()
        w.sweep()
        self.assertEqual(set(), self._marked(DOWN))
        self._at(self.down_time + 1)
        self._heartbeat()
        w.sweep()
        self.assertEqual({'compute1-1'}, self._marked(DOWN))
        # It reports in again: the trait goes at the next sweep.
        self._at(self.down_time + 20)
        self._heartbeat('compute1-1')
        w.sweep()
        self.assertEqual(set(), self._marked(DOWN))

    def test_two_watchers_converge_without_flapping(self):
        a, b = self._watcher(), self._watcher()
        self._stop('compute1-2')
        a.sweep()
        self._at(30)
        self._heartbeat()
        b.sweep()       # b starts watching half a window later than a
        history = []
        for t in (self.down_time + 1, self.down_time + 15,
                  self.down_time + 31, self.down_time + 45):
            self._at(t)
            self._heartbeat()
            for w in (a, b, b, a):
                w.sweep()
                history.append(self._marked(DOWN))
        # Marked from a's confirmation on, never unmarked by b's
        # not-yet-confirmed view, no healthy host ever marked.
        self.assertEqual([{'compute1-2'}] * len(history), history)
        self.assertEqual(1, a.engine.counts['written'] +
                         b.engine.counts['written'])
        self._at(self.down_time + 60)
        self._heartbeat('compute1-2')
        self._heartbeat()
        for w in (b, a):
            w.sweep()
        self.assertEqual(set(), self._marked(DOWN))


class TestServicesAPI(_ComputeStatusBase):
    COMPUTES_PER_CELL = 1
    HEALTHY = 'compute2-1'

    def _service_id(self, host):
        return self.admin_api.get_services(
            binary='nova-compute', host=host)[0]['id']

    def _drain(self):
        self.assertTrue(dispatcher.get_dispatcher(CONF).drain(10))

    def _heartbeats(self):
        """The consumer's ``HeartbeatWait``."""
        consumers = [c for _n, c in dispatcher.get_dispatcher(CONF).consumers
                     if isinstance(c, consumer_mod.ServiceStatusConsumer)]
        self.assertEqual(1, len(consumers))
        self.assertIsNotNone(consumers[0].heartbeats)
        return consumers[0].heartbeats

    def _until(self, what, done, timeout=30):
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline:
                self.fail('not %s after %d s' % (what, timeout))
            time.sleep(0.1)

    def _reported_in(self, host):
        """The compute reports in; the consumer applies what that says.

        Once the consumer has seen a status change it follows the
        compute's heartbeat counter until the watcher's rule knows.
        """
        self._drain()
        self._heartbeat(host)
        wait = self._heartbeats()
        self._until('%s judged' % host, lambda: host not in wait.pending())

    def test_disable_enable_synchronous(self):
        self.assertIn("consumers: ['compute-status']",
                      self.stdlog.logger.output)
        sid = self._service_id('compute1-1')
        self.admin_api.put_service(sid, {'status': 'disabled'})
        # No drain: the trait is there when the API call returns.
        self.assertEqual({DISABLED}, {t for t in self._traits('compute1-1')
                                      if t in (DISABLED, DOWN)})
        self.assertNotIn(DISABLED, self._traits('compute2-1'))
        self.admin_api.put_service(sid, {'status': 'enabled'})
        self.assertNotIn(DISABLED, self._traits('compute1-1'))
        self._drain()
        self.assertNotIn(DISABLED, self._traits('compute1-1'))

    def test_forced_down_and_back(self):
        sid = self._service_id('compute1-1')
        self.admin_api.put_service(sid, {'forced_down': True})
        self._drain()
        self.assertEqual({'compute1-1'}, self._marked(DOWN))
        self.admin_api.put_service(sid, {'forced_down': False})
        self._reported_in('compute1-1')
        self.assertEqual(set(), self._marked(DOWN))

    def test_forced_up_stays_down_until_it_reports_in(self):
        host = 'compute1-1'
        self._stop(host)
        sid = self._service_id(host)
        self.admin_api.put_service(sid, {'forced_down': True})
        self._drain()
        self.assertEqual({host}, self._marked(DOWN))
        self.admin_api.put_service(sid, {'forced_down': False})
        self._drain()
        # Nova's servicegroup API takes the stopped compute for up: its
        # last heartbeat is recent on the clock of the process that asks.
        self.assertTrue(self.servicegroup.service_is_up(self._service(host)))
        wait = self._heartbeats()
        looks = wait.looks
        self._until('looked at thrice',
                    lambda: wait.looks >= looks + 3)
        self.assertEqual({host}, self._marked(DOWN))
        self.assertEqual({host}, wait.pending())
        self._reported_in(host)
        self.assertEqual(set(), self._marked(DOWN))

    def test_the_dispatchers_stop_ends_the_heartbeat_wait(self):
        host = 'compute1-1'
        # A thread of an earlier test's wait may still be ending.
        before = set(self._wait_threads())
        self._stop(host)
        sid = self._service_id(host)
        self.admin_api.put_service(sid, {'forced_down': True})
        self.admin_api.put_service(sid, {'forced_down': False})
        self._drain()
        wait = self._heartbeats()
        self.assertEqual({host}, wait.pending())
        threads = set(self._wait_threads()) - before
        self.assertEqual(1, len(threads))
        dispatcher.reset()
        self.assertEqual(set(), wait.pending())
        self._until('no thread',
                    lambda: not any(t.is_alive() for t in threads))

    @staticmethod
    def _wait_threads():
        return [t for t in threading.enumerate()
                if t.name == 'nova-ext-heartbeat-wait']

    def test_a_silent_compute_followed_for_a_window_is_marked_down(self):
        host = 'compute1-1'
        self._stop(host)
        # The consumer's wait, with a window of seconds rather than
        # service_down_time.
        wait = heartbeat_wait.HeartbeatWait(
            engine.TraitEngine.from_conf(CONF),
            heartbeat.HeartbeatTracker(self.servicegroup, 2), poll=0.2)
        self.addCleanup(wait.stop)
        cell = self.cell_mappings['cell1']
        self.assertIsNone(wait.sync(cell, host))
        self.assertEqual(set(), self._marked(DOWN))
        self._until('judged', lambda: not wait.pending())
        self.assertEqual({host}, self._marked(DOWN))
        self.assertGreaterEqual(wait.looks, 5)

    def _saved_during_first_write(self, trait_engine, host, values):
        """Save ``values`` on the service inside the engine's first write.

        As another process would, after the row was read and before the
        write lands; with no notification, so that nothing else writes it
        again. Returns the list of changes whose write it was saved in.
        """
        apply = trait_engine.apply
        saved = []
        sid = self._service(host).id

        def saved_meanwhile(ctxt, rp_uuid, change):
            if not saved:
                saved.append(change)
                with nova_context.target_cell(
                        nova_context.get_admin_context(),
                        self.cell_mappings['cell1']) as cctxt:
                    main_db_api.service_update(cctxt, sid, values)
            return apply(ctxt, rp_uuid, change)
        trait_engine.apply = saved_meanwhile
        return saved

    def test_a_change_saved_while_writing_is_written_too(self):
        host = 'compute1-1'
        trait_engine = engine.TraitEngine.from_conf(CONF)
        saved = self._saved_during_first_write(trait_engine, host,
                                               {'disabled': True})
        wait = heartbeat_wait.HeartbeatWait(
            trait_engine, heartbeat.HeartbeatTracker(self.servicegroup, 60))
        self.addCleanup(wait.stop)
        wait.sync(self.cell_mappings['cell1'], host)
        self.assertEqual(1, len(saved))
        self.assertNotIn(DISABLED, saved[0].add)
        self.assertIn(DISABLED, self._traits(host))

    def test_a_change_saved_during_a_sweeps_write_is_written_too(self):
        host = 'compute1-1'
        w = self._watcher()
        with nova_context.target_cell(nova_context.get_admin_context(),
                                      self.cell_mappings['cell1']) as cctxt:
            main_db_api.service_update(cctxt, self._service(host).id,
                                       {'disabled': True})
        saved = self._saved_during_first_write(w.engine, host,
                                               {'disabled': False})
        w.sweep()
        self.assertEqual(1, len(saved))
        self.assertIn(DISABLED, saved[0].add)
        self.assertNotIn(DISABLED, self._traits(host))

    def test_a_sweep_does_not_undo_a_newer_change(self):
        sid = self._service_id('compute1-1')
        self.admin_api.put_service(sid, {'forced_down': True})
        self._drain()
        self.assertEqual({'compute1-1'}, self._marked(DOWN))
        w = self._watcher()
        # The flag is cleared, and the consumer applies that, after the
        # sweep read the services and before it writes.
        read_placement = w.engine.providers_with
        cleared = []

        def cleared_meanwhile(ctxt, trait):
            if not cleared:
                cleared.append(trait)
                self.admin_api.put_service(sid, {'forced_down': False})
                self._reported_in('compute1-1')
                self.assertEqual(set(), self._marked(DOWN))
            return read_placement(ctxt, trait)
        w.engine.providers_with = cleared_meanwhile
        w.sweep()
        self.assertTrue(cleared)
        self.assertEqual(set(), self._marked(DOWN))

    def _as_libvirt(self, host, connected):
        """Do what Nova's libvirt driver does on losing its hypervisor.

        LibvirtDriver._set_host_enabled, when the connection to libvirt
        drops (connected False) or comes back: it saves its service, then
        syncs the disabled trait itself.
        """
        ctxt = nova_context.get_admin_context()
        with nova_context.target_cell(
                ctxt, self.cell_mappings['cell1']) as cctxt:
            service = objects.Service.get_by_compute_host(cctxt, host)
            service.disabled = not connected
            service.disabled_reason = (
                None if connected else
                'AUTO: Connection to libvirt lost: test')
            service.save()
        self.computes[host].manager.virtapi.update_compute_provider_status(
            ctxt, self._get_provider_uuid_by_host(host), enabled=connected)

    def test_hypervisor_lost_and_back(self):
        self._as_libvirt('compute1-1', connected=False)
        self._drain()
        self.assertEqual({DISABLED, DOWN}, {
            t for t in self._traits('compute1-1') if t in (DISABLED, DOWN)})
        self.assertEqual({'compute1-1'}, self._marked(DOWN))
        self._as_libvirt('compute1-1', connected=True)
        self._reported_in('compute1-1')
        self.assertEqual(set(), {t for t in self._traits('compute1-1')
                                 if t in (DISABLED, DOWN)})

    def test_every_node_of_a_multi_node_service(self):
        # An ironic-style service: one nova-compute, several root nodes.
        compute = self.computes['compute1-1']
        compute.manager.driver._set_nodes(['compute1-1', 'compute1-1-b'])
        self._run_periodics()
        nodes = [self._get_provider_uuid_by_name(n)
                 for n in ('compute1-1', 'compute1-1-b')]
        sid = self._service_id('compute1-1')

        def status_traits():
            return [{t for t in self._get_provider_traits(rp)
                     if t in (DISABLED, DOWN)} for rp in nodes]

        self.admin_api.put_service(sid, {'forced_down': True})
        self._drain()
        self.assertEqual([{DOWN}, {DOWN}], status_traits())
        self.admin_api.put_service(sid, {'forced_down': False})
        self._reported_in('compute1-1')
        self.assertEqual([set(), set()], status_traits())
        self.assertEqual(set(), {t for t in self._traits('compute2-1')
                                 if t in (DISABLED, DOWN)})

    def test_disabled_while_down_gets_trait_on_reconcile(self):
        w = self._watcher()
        self._stop('compute1-1')
        w.sweep()
        self._at(self.down_time + 1)
        self._heartbeat()
        sid = self._service_id('compute1-1')
        self.admin_api.put_service(sid, {'status': 'disabled'})
        # Nova skips its RPC for a down compute.
        self.assertIn('Compute service on host compute1-1 is down',
                      self.stdlog.logger.output)
        self._drain()
        # The consumer applied it; strip it as a lost notification would
        # have left it, and let the reconcile put it back.
        rp = self._get_provider_uuid_by_host('compute1-1')
        self._set_provider_traits(
            rp, [t for t in self._traits('compute1-1') if t != DISABLED])
        w.sweep()
        self.assertIn(DISABLED, self._traits('compute1-1'))
        self.assertIn(DOWN, self._traits('compute1-1'))

    def test_only_root_providers_and_foreign_traits_kept(self):
        root = self._get_provider_uuid_by_host('compute1-1')
        child = self.placement.post(
            '/resource_providers',
            {'name': 'compute1-1-child', 'parent_provider_uuid': root},
            version='1.20').body['uuid']
        self.placement.put('/traits/CUSTOM_OPERATOR', None, version='1.6')
        self._set_provider_traits(
            root, list(self._traits('compute1-1')) + ['CUSTOM_OPERATOR'])
        self.admin_api.put_service(self._service_id('compute1-1'),
                                   {'status': 'disabled',
                                    'forced_down': True})
        self._drain()
        self._watcher().sweep()
        self.assertLessEqual({DISABLED, DOWN, 'CUSTOM_OPERATOR'},
                             self._traits('compute1-1'))
        self.assertEqual([], self._get_provider_traits(child))
        self.admin_api.put_service(self._service_id('compute1-1'),
                                   {'status': 'enabled',
                                    'forced_down': False})
        self._reported_in('compute1-1')
        traits = self._traits('compute1-1')
        self.assertNotIn(DOWN, traits)
        self.assertNotIn(DISABLED, traits)
        self.assertIn('CUSTOM_OPERATOR', traits)

    def _assert_race_retried(self, name):
        """Commit another writer's trait inside placement's next trait PUT.

        Placement's trait handler reads the provider (its generation
        check), then the traits named in the body, then writes. Another
        writer committing just before one of those reads is what a
        compute writing at the same moment does (syncing a trait): before
        the first a 409, before the second placement's own 500. The
        consumer's write must be retried, and neither write lost.
        """
        from placement.handlers import trait as trait_handler
        owner, attr = name.rsplit('.', 1)
        target = trait_handler
        for part in owner.split('.'):
            target = getattr(target, part)
        real = getattr(target, attr)
        rp = self._get_provider_uuid_by_host('compute1-1')
        self.placement.put('/traits/CUSTOM_OTHER_WRITER', None, version='1.6')
        fired = []

        def interleaved(*args, **kwargs):
            if args and args[0] is target:
                # MonkeyPatch keeps a classmethod one: drop the class.
                args = args[1:]
            # Only inside a trait PUT: the GETs call the same functions.
            caller = sys._getframe(1).f_code.co_name
            if caller == 'update_traits_for_resource_provider' and not fired:
                fired.append(True)
                self._set_provider_traits(
                    rp, self._get_provider_traits(rp) +
                    ['CUSTOM_OTHER_WRITER'])
            return real(*args, **kwargs)

        self.useFixture(fixtures.MonkeyPatch(
            'placement.handlers.trait.' + name, interleaved))
        # No watcher: its sweep would be a second chance that hides a lost
        # write of the consumer.
        self.admin_api.put_service(self._service_id('compute1-1'),
                                   {'forced_down': True})
        self._drain()
        self.assertEqual([True], fired)
        traits = self._traits('compute1-1')
        self.assertIn('CUSTOM_OTHER_WRITER', traits)
        self.assertIn(DOWN, traits)

    def test_generation_conflict_retried(self):
        self._assert_race_retried('rp_obj.ResourceProvider.get_by_uuid')

    def test_placement_500_for_a_race_retried(self):
        self._assert_race_retried('trait_obj.get_all')

    def test_unknown_plugins_fail_at_start(self):
        self.flags(trait_callbacks=['compute-status', 'no-such-callback'],
                   group='nova_ext_compute_status')
        e = self.assertRaises(exception.PluginNotFound, self._watcher)
        self.assertIn("'no-such-callback'", str(e))
        self.flags(request_filters=['compute-down', 'no-such-filter'],
                   group='nova_ext_scheduler')
        e = self.assertRaises(exception.PluginNotFound, scheduler_ep.attach)
        self.assertIn("'no-such-filter'", str(e))
        self.assertIn('nova_ext.scheduler.request_filters', str(e))
