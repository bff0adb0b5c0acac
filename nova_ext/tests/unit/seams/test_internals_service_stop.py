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

import fixtures
from nova import rpc
from nova import service as nova_service
import oslo_messaging as messaging
from oslo_service.backend._threading import service as threading_service
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

    def test_refused_on_untested_nova(self):
        self.useFixture(ext_fixtures.UntestedNova())
        self.assertRaises(exception.UnsupportedNovaVersion,
                          service_stop.after_stop, 'test', lambda: None)
        self.assertIs(self.own, nova_service.Service.stop)
