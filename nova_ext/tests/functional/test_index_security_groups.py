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
from nova.api import auth
from osprofiler import profiler

from nova_ext import conf as ext_conf
from nova_ext.instance_list.render import neutron_feed
from nova_ext.instance_list.render import security_groups
from nova_ext.seams import api as api_entry_point
from nova_ext.tests.functional import population
from nova_ext.tests.functional import rabbit
from nova_ext.tests.functional import test_index_parity
from nova_ext.tests.functional import test_neutron_feed

CONF = ext_conf.CONF

SECOND_GROUP = {
    'id': 'aaaaaaaa-5e5e-4e4e-8d8d-0123456789ab',
    'name': 'web',
    'description': '',
    'tenant_id': population.OTHER_PROJECT,
    'project_id': population.OTHER_PROJECT,
    'security_group_rules': [],
}


class _SecurityGroupsBase(test_index_parity.IndexTestCase):
    """The population, three servers with ports, Neutron's asks recorded."""

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
        self.neutron._security_groups[SECOND_GROUP['id']] = dict(
            SECOND_GROUP)
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


class TestSecurityGroupsAtOnce(_SecurityGroupsBase):

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


class TestKeptSecurityGroups(rabbit.SharedBroker, _SecurityGroupsBase):
    """Neutron's answers kept while its feed, on a real RabbitMQ, says so.

    The Neutron here is Nova's fixture; what a change of it would send,
    Neutron's API sends through oslo.messaging before it answers, and so
    the test sends it right after the change, as Neutron would.
    """

    def setUp(self):
        super().setUp()
        # The harness's context leaves out the caller's token, which
        # nova-api's (RequestContext.from_environ) takes from the request.
        harness_context = auth.NovaKeystoneContext._create_context

        def with_token(env, **kwargs):
            context = harness_context(env, **kwargs)
            context.auth_token = env.get('HTTP_X_AUTH_TOKEN')
            return context
        self.useFixture(fixtures.MonkeyPatch(
            'nova.api.auth.NovaKeystoneContext._create_context', with_token))
        self.flags(neutron_feed_url=self.url,
                   neutron_feed_call_timeout=test_neutron_feed.CALL_TIMEOUT,
                   group='nova_ext_instance_list')
        self.addCleanup(neutron_feed.stop_all)
        self.notifier = test_neutron_feed.neutron_notifier(self, self.url)
        # Neutron's exchange exists once it has notified.
        self.notifier.info({}, 'port.create.end', {})
        self.assertTrue(neutron_feed.feed(CONF).wait_ready(60))
        test_neutron_feed.proven(self, neutron_feed.feed(CONF))

    def _get(self, api, uri):
        # As keystonemiddleware gives the context the caller's token; the
        # harness's clients send none.
        headers = {}
        if self.tokens:
            headers['X-Auth-Token'] = 'token-of-%s' % api.auth_user
        return api.api_request(uri, check_response_status=[],
                               headers=headers)

    tokens = True

    def _counts(self):
        counts = self.selector.stats.snapshot()
        return counts['groups_kept'], counts['groups_asked']

    def _list(self, api, uri, kept):
        """nova_ext's answer, Nova's; whether nova_ext asked Neutron."""
        before = self._counts()
        self.asked.clear()
        got = self.assertSameAnswer(api, uri)
        # assertSameAnswer asked Nova's path too, which asks every time.
        after = self._counts()
        self.assertEqual((before[0] + kept, before[1] + (not kept)), after)
        return got

    def test_kept_while_neutron_s_feed_proves_it_unchanged(self):
        # One population for the five, which take turns on its state.
        self._changes_notified()
        self._other_pages_servers()
        self._change_under_way()
        self._asked_by_the_view_as_nova()
        self._feed_lost()

    URI = 'servers/detail?all_tenants=1'

    def _changes_notified(self):
        uri = self.URI
        self._list(self.admin_api, uri, kept=False)
        self._list(self.admin_api, uri, kept=True)
        nova_asks = len(self.asked)
        got = self._list(self.admin_api, uri, kept=True)
        # Kept: only Nova's path asked Neutron for ports.
        self.assertEqual(nova_asks, len(self.asked))
        # Another caller's token is another view of Neutron: asked.
        self._list(self.api, 'servers/detail', kept=False)
        # Another page, of servers all on the kept one: their answers.
        self._list(self.admin_api, uri + '&limit=4', kept=True)
        # A change Neutron notified: asked again, and it shows.
        port = next(p for p in self.neutron._ports.values()
                    if p['device_id'] == self.servers['locked2']['id'])
        server = port['device_id']
        self.assertEqual(['default'], _names(got, server))
        port['security_groups'].append(SECOND_GROUP['id'])
        self.notifier.info({}, 'port.update.end', {'port': port})
        got = self._list(self.admin_api, uri, kept=False)
        self.assertEqual(['default', 'web'], _names(got, server))
        self._list(self.admin_api, uri, kept=True)
        # A group renamed.
        self.neutron._security_groups[SECOND_GROUP['id']]['name'] = 'www'
        self.notifier.info({}, 'security_group.update.end', {})
        got = self._list(self.admin_api, uri, kept=False)
        self.assertEqual(['default', 'www'], _names(got, server))
        # What cannot change a page's groups keeps the answer.
        self.notifier.info({}, 'floatingip.update.end', {})
        self._list(self.admin_api, uri, kept=True)
        # No token, no caller's view to keep it for.
        self.tokens = False
        self._list(self.admin_api, uri, kept=False)
        self._list(self.admin_api, uri, kept=False)
        self.tokens = True

    def _other_pages_servers(self):
        # A page's servers that pages kept at the same epoch showed have
        # their groups from those; Neutron is asked for the others alone.
        self.notifier.info({}, 'security_group.update.end', {})
        short, longer = self.URI + '&name=srv-port', self.URI
        first = [s['id'] for s in
                 self._list(self.admin_api, short, kept=False).json()[
                     'servers']]
        before = self._counts()
        groups, asks = self._asked_by_nova_ext(self.admin_api, longer)
        # Asked, then kept for the comparison with Nova's answer after it.
        self.assertEqual((before[0] + 1, before[1] + 1), self._counts())
        self.assertEqual(3, len(first))
        self.assertLess(set(first), groups.keys())
        # Not vacuous: servers with groups on either side.
        self.assertTrue(any(groups[uuid] for uuid in first))
        self.assertTrue(any(names for uuid, names in groups.items()
                            if uuid not in first))
        self.assertEqual(sorted(uuid for uuid in groups
                                if uuid not in first),
                         sorted(uuid for _, ids in asks for uuid in ids))
        self._list(self.admin_api, longer, kept=True)
        # Another token knows nothing of them.
        self._list(self.api, 'servers/detail?name=srv-port', kept=False)

    def _change_under_way(self):
        # Neutron commits a change between its start and its end (for a
        # port bound to a host, seconds apart): meanwhile nothing is kept
        # or given again.
        uri = self.URI
        server = self.servers['locked2']['id']
        port = next(p for p in self.neutron._ports.values()
                    if p['device_id'] == server)
        self._list(self.admin_api, uri, kept=True)
        request = test_neutron_feed.request('update')
        self.notifier.info(request, 'port.update.start',
                           {'id': port['id'], 'port': {}})
        self._list(self.admin_api, uri, kept=False)
        # Committed: Nova's view shows it at once, and so must nova_ext's.
        port['security_groups'].remove(SECOND_GROUP['id'])
        got = self._list(self.admin_api, uri, kept=False)
        self.assertEqual(['default'], _names(got, server))
        self.notifier.info(request, 'port.update.end', {'port': port})
        self._list(self.admin_api, uri, kept=False)
        self._list(self.admin_api, uri, kept=True)

    def _asked_by_the_view_as_nova(self):
        # One request at once: Nova's view asks, and its answer is kept.
        self.flags(neutron_requests_at_once=1,
                   group='nova_ext_instance_list')
        server = self.servers['active1']['id']
        port = next(p for p in self.neutron._ports.values()
                    if p['device_id'] == server)
        self.neutron._ports.pop(port['id'])
        self.notifier.info({}, 'port.delete.end', {'port_id': port['id']})
        got = self._list(self.admin_api, self.URI, kept=False)
        self.assertEqual([], _names(got, server))
        self._list(self.admin_api, self.URI, kept=True)

    def _feed_lost(self):
        uri = self.URI
        self._list(self.admin_api, uri, kept=True)
        # The feed gone (RabbitMQ closed its connections, and refuses it
        # meanwhile): Neutron is asked.
        self.broker._ctl('clear_permissions', '-p', self.vhost, 'guest')
        self.broker._ctl('close_all_connections', '-p', self.vhost,
                         'test: feed lost')
        test_neutron_feed.wait_lost(self, neutron_feed.feed(CONF))
        self._list(self.admin_api, uri, kept=False)
        self._list(self.admin_api, uri, kept=False)
        # Back: what Neutron said before the loss is not given again.
        self.broker._ctl('set_permissions', '-p', self.vhost, 'guest',
                         '.*', '.*', '.*')
        self.assertTrue(neutron_feed.feed(CONF).wait_ready(60))
        self._list(self.admin_api, uri, kept=False)
        # Nor for as long as a request begun meanwhile may take.
        test_neutron_feed.proven(self, neutron_feed.feed(CONF))
        self._list(self.admin_api, uri, kept=False)
        self._list(self.admin_api, uri, kept=True)


def _names(answer, uuid):
    server = next(s for s in answer.json()['servers'] if s['id'] == uuid)
    return [group['name'] for group in server.get('security_groups', ())]
