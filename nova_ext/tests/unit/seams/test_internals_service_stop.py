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
"""Contract: how a Nova service stops, and what nova_ext runs after."""

import inspect
import threading

from cotyledon import _utils as cotyledon_utils
import fixtures
from nova import rpc
from nova import service as nova_service
import oslo_messaging as messaging
from oslo_service.backend._threading import service as threading_service
from oslo_service.backend._threading import threadgroup
from osprofiler import opts as profiler_opts

from nova_ext import exception
from nova_ext.seams.internals import service_stop
from nova_ext.tests import fixtures as ext_fixtures
from nova_ext.tests.unit import base


class TestServiceStop(base.TestCase):

    def setUp(self):
        super().setUp()
        # Nova's own, whatever an earlier test of the process attached.
        service_stop.remove()
        self.addCleanup(service_stop.remove)
        self.own = nova_service.Service.stop
        # Nova's manager asks for its notifier as it is made; the in-memory
        # transport of oslo.messaging, never used.
        messaging.get_rpc_transport(rpc.CONF)
        self.flags(transport_url='fake:/')
        rpc.init(rpc.CONF)
        self.addCleanup(rpc.cleanup)
        # As nova.config.parse_args does, for the service's profiler.
        profiler_opts.set_defaults(rpc.CONF)
        # Nova's own service, with Nova's base manager.
        self.service = nova_service.Service(
            'host', 'nova-conductor', 'conductor', 'nova.manager.Manager')
        # The threading backend's group, as Nova 34's services run, also
        # where Nova's test packages patch eventlet in (whose group logs
        # what a timer raised instead of raising it from wait()).
        self.service.tg = threadgroup.ThreadGroup()
        self.addCleanup(self.service.tg.stop)

    def test_oslo_service_stops_the_service_then_exits(self):
        # Why atexit is not enough: on SIGTERM, and in each forked worker,
        # oslo.service's threading backend calls stop() and then leaves by
        # os._exit. If it stops calling stop(), this fails.
        graceful = inspect.getsource(
            threading_service.ProcessLauncher._graceful_shutdown)
        self.assertLess(graceful.index('self.service.stop()'),
                        graceful.index('os._exit('))
        self.assertIn('self.service_instance.stop()', inspect.getsource(
            threading_service.ServiceWrapper.terminate))

    def test_a_worker_leaves_once_wait_raised(self):
        # Why a stop's functions are waited for in wait(): the worker's
        # other thread leaves the process as soon as wait() raises. If
        # oslo.service or cotyledon stop doing so, this fails.
        run = inspect.getsource(threading_service.ServiceWrapper.run)
        self.assertLess(run.index('self.service_instance.wait()'),
                        run.index('except Exception:'))
        self.assertLess(run.index('except Exception:'),
                        run.index('sys.exit(1)'))
        self.assertIn('os._exit(exc.code)', inspect.getsource(
            cotyledon_utils.exit_on_exception))
        # Nova's periodic tasks give no interval during a graceful
        # shutdown; with Nova's own timer (Service.start), wait() raises.
        self.assertIn('self.tg.add_dynamic_timer(self.periodic_tasks',
                      inspect.getsource(nova_service.Service.start))
        self.service.manager.set_shutdown_in_progress()
        self.assertIsNone(self.service.periodic_tasks())
        self._skipped_periodic_tasks()
        self.assertRaises(RuntimeError, nova_service.Service.wait,
                          self.service)

    def _skipped_periodic_tasks(self, heartbeat=False):
        """Nova's timers, the periodic one run during a graceful shutdown.

        In Service.start's order: the heartbeat's first (the servicegroup
        join), which runs until the service stops.
        """
        if heartbeat:
            self.service.tg.add_timer(60, lambda: None)
        self.service.manager.set_shutdown_in_progress()
        timer = self.service.tg.add_dynamic_timer(
            self.service.periodic_tasks, initial_delay=0,
            periodic_interval_max=self.service.periodic_interval_max)
        # Its run raised, which its wait() raises again.
        self.assertRaises(RuntimeError, timer.wait)

    def test_wait_raised_during_a_stop_ends_after_its_functions(self):
        seen = []
        entered = threading.Event()
        release = threading.Event()

        def after():
            seen.append('after began')
            entered.set()
            self.assertTrue(release.wait(10))
            seen.append('after ended')
        service_stop.after_stop('test', after)
        self._skipped_periodic_tasks(heartbeat=True)

        def wait():
            try:
                self.service.wait()
            except RuntimeError as e:
                seen.append('wait raised: %s' % e)
        # As in a worker: wait() runs from the start, stop() on SIGTERM.
        waiting = threading.Thread(target=wait)
        waiting.start()
        stopping = threading.Thread(target=self.service.stop)
        stopping.start()
        self.assertTrue(entered.wait(10))
        waiting.join(0.5)
        self.assertTrue(waiting.is_alive(), seen)
        release.set()
        stopping.join(10)
        waiting.join(10)
        self.assertEqual(
            ['after began', 'after ended', 'wait raised: A dynamic interval '
             'looping call should supply either an interval or '
             'periodic_interval_max'], seen)

    def test_wait_raised_without_a_stop_runs_the_functions(self):
        seen = []
        service_stop.after_stop('test', lambda: seen.append('after'))
        self._skipped_periodic_tasks()
        self.assertRaises(RuntimeError, self.service.wait)
        self.assertEqual(['after'], seen)

    def test_wait_returned_without_a_stop_runs_nothing(self):
        seen = []
        service_stop.after_stop('test', lambda: seen.append('after'))
        self.service.wait()
        self.assertEqual([], seen)

    def test_after_novas_stop(self):
        seen = []

        def after():
            seen.append(self.service.manager._shutdown_in_progress.is_set())
        service_stop.after_stop('test', after)
        self.assertIsNot(self.own, nova_service.Service.stop)
        self.service.stop()
        # Nova's stop ran first, whole.
        self.assertEqual([True], seen)

    def test_also_after_a_stop_that_failed(self):
        seen = []
        service_stop.after_stop('test', lambda: seen.append('after'))
        self.service.manager = None
        self.assertRaises(AttributeError, self.service.stop)
        self.assertEqual(['after'], seen)

    def test_one_function_per_name_and_one_failing_stops_no_other(self):
        seen = []
        log = self.useFixture(fixtures.FakeLogger())

        def fails():
            raise RuntimeError('nothing to record with')
        service_stop.after_stop('a', lambda: seen.append('first a'))
        service_stop.after_stop('b', fails)
        service_stop.after_stop('c', lambda: seen.append('c'))
        service_stop.after_stop('a', lambda: seen.append('second a'))
        self.service.stop()
        self.assertEqual(['second a', 'c'], seen)
        self.assertIn('after the nova-conductor service stopped', log.output)
        self.assertIn('nothing to record with', log.output)

    def test_remove_gives_nova_its_own_back(self):
        service_stop.after_stop('test', lambda: None)
        service_stop.after_stop('other', lambda: None)
        service_stop.remove()
        self.assertIs(self.own, nova_service.Service.stop)
        self.assertNotIn('wait', vars(nova_service.Service))

    def test_refused_on_untested_nova(self):
        self.useFixture(ext_fixtures.UntestedNova())
        self.assertRaises(exception.UnsupportedNovaVersion,
                          service_stop.after_stop, 'test', lambda: None)
        self.assertIs(self.own, nova_service.Service.stop)
