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
"""A detailed page's security groups: Neutron asked in chunks at once.

Nova's chunk of device ids is set to 1 here, on Nova's path and nova_ext's
alike, so that a page of the population is asked for in as many chunks as
it has servers: nova_ext's chunks come from the threads of its pool while
the page is rendered, then one request for the groups, Nova's one after
another from the request's thread, and the answers, groups and all, are
the same bytes.
"""

import threading

import fixtures
from neutronclient.common import exceptions as neutron_exc
from osprofiler import profiler

from nova_ext.instance_list.render import security_groups
from nova_ext.seams import api as api_entry_point
from nova_ext.tests.functional import population
from nova_ext.tests.functional import test_index_parity

SECOND_GROUP = {
    'id': 'aaaaaaaa-5e5e-4e4e-8d8d-0123456789ab',
    'name': 'web',
    'description': '',
    'tenant_id': population.OTHER_PROJECT,
    'project_id': population.OTHER_PROJECT,
    'security_group_rules': [],
}


class TestSecurityGroupsAtOnce(test_index_parity.IndexTestCase):

    NOVA_EXT_OPTIONS = {'nova_ext_instance_list': dict(
        test_index_parity.CACHED_OPTIONS['nova_ext_instance_list'],
        neutron_requests_at_once=3)}
    FAST_RENDER = True

    def setUp(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova.network.security_group_api.MAX_SEARCH_IDS', 1))
        super().setUp()
        self.addCleanup(security_groups.shutdown)
        self.servers = population.build(self)
        net = [{'uuid': self.neutron.network_1['id']}]
        self.flags(instances=-1, cores=-1, ram=-1, group='quota')
        # The population made flavors that can be listed first, one too
        # big to schedule: ask for m1.tiny, as the population does.
        for n in range(3):
            self._create_server(name='srv-port%d' % n, networks=net,
                                flavor_id='1')
        self.sync_index()
        # One server's port in a second group, which shows after the first.
        self.neutron._security_groups[SECOND_GROUP['id']] = SECOND_GROUP
        ports = [port for port in self.neutron._ports.values()
                 if port['device_id'] == self.servers['active1']['id']]
        ports[0]['security_groups'].append(SECOND_GROUP['id'])
        self.asked = []
        #: The osprofiler trace each request for ports was made in.
        self.traces = []
        list_ports = self.neutron.list_ports

        def recorded(*args, **kwargs):
            self.asked.append((threading.get_ident(),
                               tuple(kwargs.get('device_id') or ())))
            prof = profiler.get()
            self.traces.append(prof and (prof.get_base_id(), prof.get_id()))
            return list_ports(*args, **kwargs)
        self.useFixture(fixtures.MockPatchObject(
            self.neutron, 'list_ports', recorded))
        self.failing = None
        self.group_requests = 0
        list_groups = self.neutron.list_security_groups

        def failing(*args, **kwargs):
            self.group_requests += 1
            if self.failing:
                raise self.failing
            return list_groups(*args, **kwargs)
        self.useFixture(fixtures.MockPatchObject(
            self.neutron, 'list_security_groups', failing))

    def _asked_by_nova_ext(self, api, uri):
        """nova_ext's answer's groups, and the device ids of its asks."""
        self.asked.clear()
        self.group_requests = 0
        got = self._get(api, uri)
        self.assertEqual(200, got.status_code, got.text)
        asks = list(self.asked)
        # Then the requests for the groups of all the ports, as Nova's.
        ours, self.group_requests = self.group_requests, 0
        with api_entry_point.stock_instance_list():
            self._get(api, uri)
        self.assertEqual(self.group_requests, ours)
        self.assertSameAnswer(api, uri)
        groups = {s['id']: [g['name'] for g in s.get('security_groups', ())]
                  for s in got.json()['servers']}
        return groups, asks

    def test_same_groups_as_nova_asked_at_once(self):
        uri = 'servers/detail?all_tenants=1'
        groups, asks = self._asked_by_nova_ext(self.admin_api, uri)
        # Not vacuous: servers with ports show their groups, both of the
        # server in two groups in Neutron's order.
        self.assertEqual(['default', 'web'],
                         groups[self.servers['active1']['id']])
        self.assertEqual(5, sum(1 for names in groups.values() if names))
        # One server per request, every server of the page, from the pool.
        self.assertEqual(sorted((uuid,) for uuid in groups),
                         sorted(ids for _, ids in asks))
        self.assertNotIn(threading.get_ident(),
                         {thread for thread, _ in asks})
        # Nova's path asks one after another, from the request's thread.
        self.asked.clear()
        with api_entry_point.stock_instance_list():
            self._get(self.admin_api, uri)
        self.assertEqual({threading.get_ident()},
                         {thread for thread, _ in self.asked})
        # A project's page, and a page of the cache and the full rows.
        self._asked_by_nova_ext(self.api, 'servers/detail')
        self._asked_by_nova_ext(self.admin_api,
                                'servers/detail?all_tenants=1&limit=4')
        self._asked_by_nova_ext(population.other_project_api(self),
                                'servers/detail?name=srv')

    def test_one_at_once_asks_as_nova(self):
        self.flags(neutron_requests_at_once=1,
                   group='nova_ext_instance_list')
        groups, asks = self._asked_by_nova_ext(
            self.admin_api, 'servers/detail?all_tenants=1')
        self.assertEqual(['default', 'web'],
                         groups[self.servers['active1']['id']])
        self.assertEqual({threading.get_ident()},
                         {thread for thread, _ in asks})

    def test_neutron_failing_answers_as_nova(self):
        self.failing = neutron_exc.InternalServerError()
        uri = 'servers/detail?all_tenants=1'
        got = self._get(self.admin_api, uri)
        with api_entry_point.stock_instance_list():
            want = self._get(self.admin_api, uri)
        self.assertEqual(want.status_code, got.status_code)
        self.assertEqual(want.json(), got.json())
        self.assertNotEqual(200, got.status_code)

    def test_a_traced_request_s_trace_goes_to_neutron(self):
        # As osprofiler's WSGI middleware starts the trace of a request
        # that asks for one (the harness's API runs in the test's thread).
        profiler.init('secret', base_id='trace-1', parent_id='span-1')
        self.addCleanup(profiler.clean)
        span = profiler.get().get_id()
        uri = 'servers/detail?all_tenants=1'
        self.asked.clear()
        self.traces.clear()
        got = self.assertSameAnswer(self.admin_api, uri)
        # nova_ext's requests, from the pool's threads, then Nova's, from
        # the request's: all within the request's trace.
        mine = {thread for thread, _ in self.asked}
        self.assertGreater(len(mine), 1)
        self.assertEqual(len(got.json()['servers']) * 2, len(self.traces))
        self.assertEqual({('trace-1', span)}, set(self.traces))
        # The pool's threads are left untraced: an untraced request's
        # requests are not counted in the last one's trace.
        profiler.clean()
        self.asked.clear()
        self.traces.clear()
        self._get(self.admin_api, uri)
        self.assertNotIn(threading.get_ident(),
                         {thread for thread, _ in self.asked})
        self.assertEqual({None}, set(self.traces))
