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
"""What ``nova-ext-bench list`` does to a cloud it stopped, in Nova.

The benchmark stops a cloud's process (SIGSTOP) for minutes while other
clouds are timed; its computes' heartbeats age meanwhile. Nova's answers
are compared once every compute shows up again, and a timed child counts
the computes as up while it holds them stopped.
"""

from nova import servicegroup
from oslo_config import cfg

from nova_ext.tests.functional import base
from nova_ext.tests.functional import population

from nova_ext_tools.bench import listcloud


class TestHeartbeats(base.NovaExtTestCase):

    def _age(self, host):
        """The last heartbeat of ``host`` as after minutes stopped."""
        population.age_heartbeat(host)
        self.assertFalse(servicegroup.API().service_is_up(
            population.compute_service(host)))

    def test_nova_is_asked_once_every_compute_reports_again(self):
        self._age('compute1-1')
        waited = listcloud._computes_up(timeout=60)
        self.assertGreater(waited, 0.0)
        self.assertTrue(servicegroup.API().service_is_up(
            population.compute_service('compute1-1')))

    def test_a_compute_that_never_reports_again_fails_the_cloud(self):
        self.computes['compute2-1'].stop()
        self._age('compute2-1')
        error = self.assertRaises(RuntimeError, listcloud._computes_up,
                                  timeout=2)
        self.assertIn('compute2-1', str(error))

    def test_a_timed_child_counts_aged_heartbeats_as_up(self):
        server = self._create_server(networks='none')
        host = server['OS-EXT-SRV-ATTR:host']
        self.computes[host].stop()
        self._age(host)
        self.assertEqual('UNKNOWN', self.admin_api.get_server(
            server['id'])['host_status'])
        self.addCleanup(listcloud._heartbeats_held,
                        cfg.CONF.service_down_time)
        # As in a child: Nova's API made its servicegroup driver when it
        # started, with the configured down time.
        listcloud._heartbeats_held()
        self.assertEqual(listcloud.HELD_DOWN_TIME,
                         cfg.CONF.service_down_time)
        self.assertEqual('UP', self.admin_api.get_server(
            server['id'])['host_status'])
