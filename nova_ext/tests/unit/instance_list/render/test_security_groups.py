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
"""A page's security groups asked in chunks at once, answered as Nova's.

Neutron's side (Nova's requests against Nova's Neutron fixture, every
answer compared with Nova's) is in the functional tests
(``test_index_security_groups``); these hold the chunks, the threads, the
one request for the groups and the hand-over to the view.
"""

import os
import threading

import fixtures
from oslo_context import context as oslo_context
from osprofiler import profiler

from nova_ext.instance_list.render import security_groups
from nova_ext.seams.internals import security_group_api
from nova_ext.tests.unit import base


class TestLookup(base.TestCase):

    def setUp(self):
        super().setUp()
        self.addCleanup(security_groups.shutdown)
        self.asked = []
        self.groups_asked = []
        #: The osprofiler trace each request to Neutron was made in.
        self.traces = []
        self.fail_for = set()
        self.barrier = None
        self.gate = None
        self.useFixture(fixtures.MockPatchObject(
            security_group_api, 'ports', self._ports))
        self.useFixture(fixtures.MockPatchObject(
            security_group_api, 'bindings_of_ports', self._groups))
        self.useFixture(fixtures.MockPatchObject(
            security_group_api, 'bindings', self._now))
        self.useFixture(fixtures.MockPatchObject(
            security_group_api, 'ids_per_request', return_value=2))
        self.context = oslo_context.RequestContext(request_id='req-page')

    def _ports(self, context, uuids):
        if self.barrier is not None:
            # Every chunk waits here until all are in Neutron at once.
            self.barrier.wait(5)
        if self.gate is not None:
            self.gate.wait(5)
        self.traces.append(_trace())
        current = oslo_context.get_current()
        self.asked.append((threading.get_ident(), list(uuids),
                           current and current.request_id))
        if self.fail_for & set(uuids):
            raise ValueError('neutron refused %s' % uuids)
        return [{'device_id': uuid, 'security_groups': ['sg']}
                for uuid in uuids]

    def _groups(self, context, ports):
        self.traces.append(_trace())
        self.groups_asked.append([port['device_id'] for port in ports])
        return {port['device_id']: [{'name': 'sg'}] for port in ports}

    def _now(self, context, servers):
        self.asked.append((threading.get_ident(),
                           [server['id'] for server in servers], None))
        return {}

    def _start(self, uuids, at_once=3):
        self.flags(neutron_requests_at_once=at_once,
                   group='nova_ext_instance_list')
        return security_groups.start(self.conf.conf, self.context, uuids)

    def _docs(self, uuids):
        return [{'id': uuid} for uuid in uuids]

    def test_chunks_of_novas_size_on_the_pool(self):
        uuids = ['a', 'b', 'c', 'd', 'e']
        lookup = self._start(uuids)
        found = lookup.bindings(self.context, self._docs(uuids))
        self.assertEqual({u: [{'name': 'sg'}] for u in uuids}, found)
        self.assertEqual([['a', 'b'], ['c', 'd'], ['e']],
                         sorted(ids for _, ids, _ in self.asked))
        threads = {thread for thread, _, _ in self.asked}
        self.assertNotIn(threading.get_ident(), threads)
        # The pool's threads log with the request's id.
        self.assertEqual({'req-page'},
                         {request for _, _, request in self.asked})
        # One request for the groups, of every port in the page's order.
        self.assertEqual([uuids], self.groups_asked)

    def test_chunks_are_asked_at_once(self):
        # Asked one after another, the first chunk's wait would break.
        self.barrier = threading.Barrier(3)
        lookup = self._start(['a', 'b', 'c', 'd', 'e', 'f'])
        found = lookup.bindings(self.context, self._docs(lookup.uuids))
        self.assertEqual(6, len(found))
        self.assertEqual(3, len({thread for thread, _, _ in self.asked}))

    def test_other_servers_are_asked_for_now(self):
        lookup = self._start(['a', 'b', 'c'])
        lookup.bindings(self.context, self._docs(['a', 'b', 'c']))
        self.asked.clear()
        lookup.bindings(self.context, self._docs(['a', 'c']))
        self.assertEqual([(threading.get_ident(), ['a', 'c'])],
                         [(thread, ids) for thread, ids, _ in self.asked])

    def test_some_servers_rendered_alone_get_the_page_s_answer(self):
        lookup = self._start(['a', 'b', 'c'])
        page = lookup.page()
        self.assertIs(page, lookup.read())
        self.asked.clear()
        part = lookup.part(['c', 'a'])
        self.assertEqual({'c': page['c'], 'a': page['a']},
                         part.bindings(self.context, self._docs(['c', 'a'])))
        self.assertEqual([], self.asked)
        # Other servers, or another context: asked for now, as Nova asks.
        part.bindings(self.context, self._docs(['a', 'c']))
        part.bindings(oslo_context.RequestContext(), self._docs(['c', 'a']))
        self.assertEqual([['a', 'c'], ['c', 'a']],
                         [ids for _, ids, _ in self.asked])

    def test_another_context_asks_with_its_own(self):
        lookup = self._start(['a'])
        lookup.bindings(self.context, self._docs(['a']))
        self.asked.clear()
        other = oslo_context.RequestContext(request_id='req-other')
        lookup.bindings(other, self._docs(['a']))
        self.assertEqual([(threading.get_ident(), ['a'])],
                         [(thread, ids) for thread, ids, _ in self.asked])

    def test_a_failed_chunk_raises_as_novas_lookup(self):
        self.fail_for = {'d'}
        lookup = self._start(['a', 'b', 'c', 'd'])
        error = self.assertRaises(ValueError, lookup.bindings, self.context,
                                  self._docs(['a', 'b', 'c', 'd']))
        self.assertEqual("neutron refused ['c', 'd']", str(error))
        self.assertEqual([], self.groups_asked)

    def test_a_pool_shut_down_meanwhile_still_answers(self):
        # More chunks than threads: some wait in the pool's queue when it
        # is shut down, and it runs them before it stops.
        self.gate = threading.Event()
        lookup = self._start(['a', 'b', 'c', 'd', 'e', 'f'], at_once=2)
        stopper = threading.Thread(target=security_groups.shutdown)
        stopper.start()
        self.gate.set()
        stopper.join(10)
        self.assertFalse(stopper.is_alive())
        found = lookup.bindings(self.context, self._docs(lookup.uuids))
        self.assertEqual(6, len(found))
        self.assertEqual([lookup.uuids], self.groups_asked)

    def test_a_forked_process_has_a_pool_of_its_own(self):
        # Every thread of the parent's pool made: a child forked since
        # inherits them as objects, not as threads, and its own pool
        # must run what it is given.
        gate = threading.Event()
        parent = security_groups._pool(2)
        busy = [parent.submit(gate.wait, 10) for _ in range(2)]
        self.addCleanup(gate.set)
        pid = os.fork()
        if pid == 0:
            try:
                ran = security_groups._pool(2).submit(lambda: 42).result(5)
            except BaseException:
                ran = None
            os._exit(0 if ran == 42 else 1)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(0, os.waitstatus_to_exitcode(status))
        gate.set()
        self.assertEqual([True, True], [f.result(10) for f in busy])

    def test_one_at_once_or_an_empty_page_leaves_it_to_the_view(self):
        self.assertIsNone(self._start(['a', 'b', 'c'], at_once=1))
        self.assertIsNone(self._start([]))
        self.assertEqual([], self.asked)

    def test_a_traced_request_s_trace_goes_with_its_requests(self):
        # As osprofiler's WSGI middleware starts the trace of a request
        # that asks for one.
        profiler.init('secret', base_id='trace-1', parent_id='span-1')
        self.addCleanup(profiler.clean)
        span = profiler.get().get_id()
        uuids = ['a', 'b', 'c', 'd', 'e']
        lookup = self._start(uuids)
        lookup.bindings(self.context, self._docs(uuids))
        # Three chunks of ports, then the groups: each a child of the
        # request's span, signed with its key.
        self.assertEqual([('trace-1', span, 'secret')] * 4, self.traces)
        # The pool's threads are left untraced: an untraced page's
        # requests are not counted in the last one's trace.
        profiler.clean()
        self.traces.clear()
        lookup = self._start(uuids)
        lookup.bindings(self.context, self._docs(uuids))
        self.assertEqual([None] * 4, self.traces)

    def test_known_servers_are_not_asked_for(self):
        kept = []
        known = {'s1': [{'name': 'web'}], 's2': None}
        lookup = security_groups.Lookup(
            security_groups._pool(3), self.context, ['s1', 's2', 's3', 's4'],
            2, keep=kept.append, known=known)
        got = lookup.page()
        self.assertEqual([['s3', 's4']], [ids for _, ids, _ in self.asked])
        self.assertEqual([['s3', 's4']], self.groups_asked)
        self.assertEqual({'s1': [{'name': 'web'}], 's3': [{'name': 'sg'}],
                          's4': [{'name': 'sg'}]}, got)
        self.assertEqual([got], kept)
        # The known answer is another page's: this one's lists are its own.
        self.assertIsNot(known['s1'], got['s1'])

    def test_every_server_known_asks_nothing(self):
        kept = []
        lookup = security_groups.Lookup(
            security_groups._pool(3), self.context, ['s1', 's2'], 2,
            keep=kept.append, known={'s1': [{'name': 'web'}], 's2': None})
        self.assertEqual({'s1': [{'name': 'web'}]}, lookup.page())
        self.assertEqual([], self.asked)
        self.assertEqual([], self.groups_asked)
        self.assertEqual([lookup.page()], kept)

    def test_asked_by_the_view_for_servers_not_known(self):
        kept = []
        page = security_groups.Asked(self.context, ['s1', 's2'], kept.append,
                                     {'s1': [{'name': 'web'}]})
        got = page.bindings(self.context, self._docs(['s1', 's2']))
        self.assertEqual([['s2']], [ids for _, ids, _ in self.asked])
        self.assertEqual({'s1': [{'name': 'web'}]}, got)
        self.assertEqual([got], kept)


def _trace():
    prof = profiler.get()
    return prof and (prof.get_base_id(), prof.get_id(), prof.hmac_key)


class TestKept(base.TestCase):

    def test_a_kept_answer_gives_each_page_lists_of_its_own(self):
        context = oslo_context.RequestContext(auth_token='t')
        groups = {'s1': [{'name': 'default'}]}
        kept = security_groups.Kept(context, ['s1', 's2'], groups)
        servers = [{'id': 's1'}, {'id': 's2'}]
        got = kept.bindings(context, servers)
        self.assertEqual(groups, got)
        got['s1'][0]['name'] = 'changed by a page'
        # The same page's answer is the same each time it is asked.
        self.assertIs(got, kept.bindings(context, servers))
        self.assertIs(got, kept.page())
        # Read as given, without lists of its own: nothing is written.
        self.assertIs(groups, kept.read())
        other = security_groups.Kept(context, ['s1', 's2'], groups)
        self.assertEqual({'s1': [{'name': 'default'}]},
                         other.bindings(context, servers))
        self.assertTrue(kept.kept)
