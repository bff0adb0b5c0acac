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
"""Request filters, the compute-status callback and the heartbeat rule."""

import datetime
import importlib.util

import fixtures
from nova import objects
from nova.scheduler import request_filter

from nova_ext.compute_status import engine
from nova_ext.compute_status import heartbeat
from nova_ext.entry_points import scheduler as scheduler_ep
from nova_ext import exception
from nova_ext.scheduler import request_filters
from nova_ext.tests.unit import base
from nova_ext import virt
from nova_ext.virt import base as virt_base
from nova_ext.virt import trait_callbacks

DISABLED = trait_callbacks.COMPUTE_STATUS_DISABLED
DOWN = trait_callbacks.COMPUTE_STATUS_DOWN


def _spec():
    objects.register_all()
    return objects.RequestSpec(
        instance_uuid='2a1b6b8e-0c1e-4f5c-9d51-6b2f0f7a1c11',
        request_level_params=objects.RequestLevelParams())


class _Response(object):
    def __init__(self, status_code):
        self.status_code = status_code
        self.text = ''


class _Client(object):
    def __init__(self, status_code=201):
        self.status_code = status_code
        self.puts = []

    def put(self, url, data, version=None, global_request_id=None):
        self.puts.append(url)
        return _Response(self.status_code)


class _Ctxt(object):
    global_id = 'req-1'


class TestRequestFilters(base.TestCase):

    def setUp(self):
        super().setUp()
        original = list(request_filter.ALL_REQUEST_FILTERS)
        self.addCleanup(request_filter.ALL_REQUEST_FILTERS.__setitem__,
                        slice(None), original)
        self.client = _Client()
        self.useFixture(fixtures.MockPatch(
            'nova.scheduler.client.report.report_client_singleton',
            return_value=self.client))

    def test_attached_by_name_and_traced(self):
        self.flags(request_filters=['compute-disabled', 'compute-down'],
                   group='nova_ext_scheduler')
        scheduler_ep.attach()
        self.assertEqual(['compute-disabled', 'compute-down'],
                         scheduler_ep.attached())
        ours = request_filter.ALL_REQUEST_FILTERS[-2:]
        # trace_request_filter keeps the wrapped function's name.
        self.assertEqual(
            ['nova_ext:compute-disabled', 'nova_ext:compute-down'],
            [f.__name__ for f in ours])

    def test_disabled_filter_alone_forbids(self):
        spec = _spec()
        self.assertTrue(request_filters.ComputeDisabledFilter()(_Ctxt(), spec))
        self.assertEqual({DISABLED}, spec.root_forbidden)

    def test_disabled_filter_stands_by_after_nova(self):
        log = self.useFixture(fixtures.FakeLogger(level='INFO'))
        ours = request_filters.ComputeDisabledFilter()
        for _ in range(3):
            spec = _spec()
            # Nova's own filter runs first in the pipeline.
            self.assertTrue(request_filter.compute_status_filter(None, spec))
            self.assertFalse(ours(_Ctxt(), spec))
            self.assertEqual({DISABLED}, spec.root_forbidden)
        self.assertEqual(1, log.output.count('compute-disabled stands by'))

    def test_down_filter_creates_trait_once(self):
        ours = request_filters.ComputeDownFilter()
        for _ in range(3):
            spec = _spec()
            self.assertTrue(ours(_Ctxt(), spec))
            self.assertEqual({DOWN}, spec.root_forbidden)
        self.assertEqual(['/traits/%s' % DOWN], self.client.puts)

    def test_down_filter_steps_aside_when_placement_fails(self):
        self.client.status_code = 503
        ours = request_filters.ComputeDownFilter()
        spec = _spec()
        self.assertFalse(ours(_Ctxt(), spec))
        self.assertEqual(set(), spec.root_forbidden)
        self.client.status_code = 204
        self.assertTrue(ours(_Ctxt(), spec))
        self.assertEqual({DOWN}, spec.root_forbidden)

    def test_filters_never_save(self):
        spec = _spec()
        self.useFixture(fixtures.MockPatchObject(
            objects.RequestSpec, 'save', side_effect=AssertionError('saved')))
        request_filters.ComputeDisabledFilter()(_Ctxt(), spec)
        request_filters.ComputeDownFilter()(_Ctxt(), spec)
        self.assertEqual({DISABLED, DOWN}, spec.root_forbidden)


class TestComputeStatusCallback(base.TestCase):

    def setUp(self):
        super().setUp()
        self.cb = trait_callbacks.ComputeStatusCallback()

    def _traits(self, **status):
        change = self.cb.traits_for(None, virt_base.ServiceStatus(
            host='h', **status))
        return set(change.add), set(change.remove)

    def test_healthy(self):
        self.assertEqual((set(), {DISABLED, DOWN}), self._traits())

    def test_disabled(self):
        self.assertEqual(({DISABLED}, {DOWN}), self._traits(disabled=True))

    def test_down_ways(self):
        for status in ({'forced_down': True}, {'up': False},
                       {'hypervisor_up': False},
                       {'forced_down': True, 'up': None}):
            self.assertEqual(({DOWN}, {DISABLED}), self._traits(**status))

    def test_unknown_heartbeat_leaves_down_alone(self):
        self.assertEqual(({DISABLED}, set()),
                         self._traits(up=None, disabled=True))

    def test_loaded_by_name_unknown_fails_clearly(self):
        self.flags(trait_callbacks=['compute-status'],
                   group='nova_ext_compute_status')
        self.assertEqual(['compute-status'],
                         [n for n, _ in virt.load_trait_callbacks(
                             self.conf.conf)])
        self.flags(trait_callbacks=['compute-status', 'no-such'],
                   group='nova_ext_compute_status')
        e = self.assertRaises(exception.PluginNotFound,
                              engine.TraitEngine.from_conf, self.conf.conf)
        self.assertIn("'no-such'", str(e))
        self.assertIn('nova_ext.virt.trait_callbacks', str(e))


class TestHypervisorStatus(base.TestCase):

    def _service(self, disabled, reason):
        return objects.Service(host='h', disabled=disabled,
                               disabled_reason=reason, forced_down=False)

    def test_only_the_drivers_own_disable_means_hypervisor_lost(self):
        lost = self._service(True, 'AUTO: Connection to libvirt lost: 1')
        self.assertIs(False, engine.hypervisor_up(lost))
        self.assertIs(False, engine.status_of(lost, True).hypervisor_up)
        for service in (self._service(True, 'maintenance'),
                        self._service(True, None),
                        self._service(False, None),
                        # Re-enabled by hand, the old reason left behind.
                        self._service(False, 'AUTO: Connection lost')):
            self.assertIsNone(engine.hypervisor_up(service))

    def test_prefix_is_novas_libvirt_drivers(self):
        # Read, not imported: the driver module wants libvirt's bindings.
        path = importlib.util.find_spec('nova.virt.libvirt.driver').origin
        with open(path) as f:
            source = f.read()
        self.assertIn("\nDISABLE_PREFIX = %r\n"
                      % engine.HYPERVISOR_LOST_PREFIX, source)
        self.assertIn('DISABLE_PREFIX + disable_reason', source)


class _Rogue(virt_base.TraitCallback):
    owned_traits = frozenset(['CUSTOM_MINE'])

    def traits_for(self, old, new):
        return virt_base.TraitChange(remove=frozenset(['CUSTOM_NOT_MINE']))


class _Keeper(virt_base.TraitCallback):
    owned_traits = frozenset([DOWN])

    def traits_for(self, old, new):
        return virt_base.TraitChange(add=frozenset([DOWN]))


class TestEngineMerge(base.TestCase):

    def test_callback_may_not_touch_others_traits(self):
        eng = engine.TraitEngine([('rogue', _Rogue())])
        e = self.assertRaises(exception.NovaExtError, eng.change_for, None,
                              virt_base.ServiceStatus(host='h'))
        self.assertIn('CUSTOM_NOT_MINE', str(e))

    def test_add_wins_over_remove(self):
        eng = engine.TraitEngine([
            ('status', trait_callbacks.ComputeStatusCallback()),
            ('keeper', _Keeper())])
        change = eng.change_for(None, virt_base.ServiceStatus(host='h'))
        self.assertEqual({DOWN}, set(change.add))
        self.assertEqual({DISABLED}, set(change.remove))
        self.assertEqual({DISABLED, DOWN}, eng.owned)


class _Service(object):
    def __init__(self, report_count=1, forced_down=False):
        self.uuid = 's1'
        self.report_count = report_count
        self.forced_down = forced_down


class _SG(object):
    up = True

    def service_is_up(self, service):
        return self.up and not service.forced_down


class TestHeartbeatTracker(base.TestCase):

    def setUp(self):
        super().setUp()
        self.now = datetime.datetime(2024, 1, 1)
        self.sg = _SG()
        self.tracker = heartbeat.HeartbeatTracker(
            self.sg, 60, clock=lambda: self.now)

    def _at(self, seconds, service):
        self.now = datetime.datetime(2024, 1, 1) + datetime.timedelta(
            seconds=seconds)
        return self.tracker(service)

    def test_down_only_after_a_full_window(self):
        svc = _Service()
        self.assertTrue(self._at(0, svc))
        self.sg.up = False
        self.assertIsNone(self._at(30, svc))
        self.assertIsNone(self._at(59, svc))
        self.assertFalse(self._at(60, svc))
        svc.report_count += 1
        self.assertTrue(self._at(61, svc))

    def test_moving_counter_is_never_down(self):
        # Clock skew: the servicegroup API says down, the counter moves.
        self.sg.up = False
        svc = _Service()
        self.assertIsNone(self._at(0, svc))
        for t in range(10, 300, 10):
            svc.report_count += 1
            self.assertTrue(self._at(t, svc))

    def test_first_sighting_of_a_down_service_is_unknown(self):
        self.sg.up = False
        svc = _Service()
        self.assertIsNone(self._at(0, svc))
        self.assertFalse(self._at(60, svc))

    def test_forced_down_defers_to_the_flag(self):
        svc = _Service(forced_down=True)
        self.assertIsNone(self._at(0, svc))
        svc.forced_down = False
        self.assertTrue(self._at(1, svc))
