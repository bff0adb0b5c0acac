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
"""What nova_ext relies on of Nova's server view builder.

``nova_ext.seams.internals.server_views`` subclasses Nova's
``ViewBuilder``, overriding four of its private methods (one a copy of
Nova's), and calls two more: these tests fail when Nova changes them.
"""

import inspect
import re
from unittest import mock

import fixtures
from nova.api.openstack.compute.views import servers as views_servers
from nova.compute import api as compute_api
from nova.objects import fields

from nova_ext import exception
from nova_ext.seams.internals import server_views
from nova_ext.tests import fixtures as ext_fixtures
from nova_ext.tests.unit import base


def _code(function):
    """The statements of a function: no comments, blank lines or wrapping."""
    source = inspect.getsource(function)
    source = re.sub(r'#[^\n]*', '', source)
    return re.sub(r'\s+', '', source)


class TestListViewCopy(base.TestCase):

    def test_same_as_novas_but_the_request_specs(self):
        nova = _code(views_servers.ViewBuilder._list_view)
        ours = _code(server_views.ViewBuilder._list_view)
        # Nova's docstring is not copied.
        nova = re.sub(r'"""[^"]*"""', '', nova)
        ours = ours.replace(
            'self.request_specs(',
            'objects.RequestSpec.get_by_instance_uuids(').replace(
            'views_servers.', '')
        self.assertEqual(nova, ours,
                         'Nova changed ViewBuilder._list_view: compare it '
                         'with nova_ext.seams.internals.server_views '
                         'and update the copy, then the Nova versions '
                         'nova_ext supports')

    def test_nova_reads_a_pages_volumes_through_one_method(self):
        # nova_ext's ViewBuilder overrides that method to read the volumes
        # from the index; if Nova's detail() stopped calling it, the page
        # would be right but read from every cell again.
        self.assertIn('self._get_instance_bdms_in_multiple_cells(',
                      _code(views_servers.ViewBuilder.detail))
        self.assertIsNot(
            views_servers.ViewBuilder._get_instance_bdms_in_multiple_cells,
            server_views.ViewBuilder._get_instance_bdms_in_multiple_cells)

    def test_nova_adds_to_a_page_through_two_methods(self):
        # Overriding them is how a page rendered again keeps what Nova
        # added to its documents the first time.
        detail = _code(views_servers.ViewBuilder.detail)
        self.assertIn('self._add_host_status(', detail)
        self.assertIn('self._add_security_grps(', detail)
        self.assertEqual(
            ['self', 'servers', 'instances', 'unknown_only'],
            list(inspect.signature(
                views_servers.ViewBuilder._add_host_status).parameters))
        self.assertEqual(
            ['self', 'request', 'servers', 'instances'],
            list(inspect.signature(
                views_servers.ViewBuilder._add_security_grps).parameters))

    def test_add_security_grps_copy_is_novas_but_the_bindings(self):
        nova = _code(views_servers.ViewBuilder._add_security_grps)
        ours = _code(server_views.ViewBuilder._add_security_grps_copy)
        ours = ours.replace(
            '_add_security_grps_copy(', '_add_security_grps(').replace(
            'self.security_group_bindings(',
            'security_group_api.get_instances_security_groups_bindings(')
        self.assertEqual(nova, ours,
                         'Nova changed ViewBuilder._add_security_grps: '
                         'compare it with nova_ext.seams.internals.'
                         'server_views and update the copy, then the Nova '
                         'versions nova_ext supports')

    def test_hooks_are_not_novas_names(self):
        for name in ('read_volumes', 'request_specs', 'adds_to_page',
                     'security_group_bindings', '_add_security_grps_copy'):
            self.assertFalse(hasattr(views_servers.ViewBuilder, name), name)


class TestDetailDecisions(base.TestCase):

    def test_novas_statements(self):
        # detail_decisions makes the decisions Nova's detail() makes, so
        # that a kept body is looked for under the same ones.
        detail = _code(views_servers.ViewBuilder.detail)
        ours = _code(server_views.detail_decisions)
        for statement in (
                "ifapi_version_request.is_supported(request,'2.47'):"
                "show_extra_specs=context.can(servers_policies.SERVERS%"
                "'show:flavor-extra-specs',fatal=False)else:"
                "show_extra_specs=False"
                "show_extended_attr=context.can("
                "esa_policies.BASE_POLICY_NAME,fatal=False)",
                "ifapi_version_request.is_supported(request,'2.16'):"
                "unknown_only=self._get_host_status_unknown_only(context)"):
            self.assertIn(statement, detail,
                          'Nova changed ViewBuilder.detail: compare it with '
                          'server_views.detail_decisions and update it, '
                          'then the Nova versions nova_ext supports')
            self.assertIn(statement.replace('self.', 'view_builder.'), ours)
        self.assertIn("context=request.environ['nova.context']", detail)
        self.assertIs(views_servers.servers_policies,
                      server_views.servers_policies)
        self.assertIs(views_servers.esa_policies, server_views.esa_policies)


class _ViewTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        # Nova's compute API wants an RPC transport when it is made.
        self.useFixture(fixtures.MockPatchObject(
            compute_api.API, '__init__', return_value=None))


class TestListWithoutDetails(_ViewTestCase):

    def test_index_renders_each_server_by_basic(self):
        self.assertIn('self._list_view(self.basic,',
                      _code(views_servers.ViewBuilder.index))

    def test_basic_shows_nothing_of_the_request_specs(self):
        # nova_ext reads no request specs for such a list.
        self.assertTrue(server_views.LIST_SHOWS_NO_SPECS)
        builder = server_views.ViewBuilder()
        request = mock.Mock(application_url='http://api/v2.1',
                            url='http://api/v2.1/servers',
                            environ={'nova.context': mock.Mock(
                                project_id='p1')})
        instance = {'uuid': 'u1', 'display_name': 'one'}
        docs = [builder.basic(request, instance, provided_az=az,
                              provided_sched_hints=hints)
                for az in (views_servers.AZ_NOT_IN_REQUEST_SPEC, None,
                           'az1')
                for hints in (views_servers.SCHED_HINTS_NOT_IN_REQUEST_SPEC,
                              {}, {'group': ['g1']})]
        self.assertEqual('one', docs[0]['server']['name'])
        for doc in docs[1:]:
            self.assertEqual(docs[0], doc)


class TestCalledMethods(_ViewTestCase):

    def test_host_status_unknown_only(self):
        self.assertEqual(
            ['context', 'instance'],
            list(inspect.signature(views_servers.ViewBuilder.
                                   _get_host_status_unknown_only).parameters))
        builder = server_views.ViewBuilder()
        context = mock.Mock()
        context.can.return_value = False
        # Policy shows no host status at all.
        self.assertIsNone(
            server_views.host_status_unknown_only(builder, context))

    def test_project_id_in_url(self):
        builder = server_views.ViewBuilder()
        request = mock.Mock(url='http://api/v2.1/p1/servers',
                            environ={'nova.context': mock.Mock(
                                project_id='p1')})
        self.assertEqual('p1',
                         server_views.project_id_in_url(builder, request))
        request.url = 'http://api/v2.1/servers'
        self.assertEqual('',
                         server_views.project_id_in_url(builder, request))

    def test_hooks_default_to_novas_behaviour(self):
        builder = server_views.ViewBuilder()
        with mock.patch.object(
                views_servers.ViewBuilder,
                '_get_instance_bdms_in_multiple_cells',
                return_value={'u1': []}) as bdms:
            self.assertEqual({'u1': []},
                             builder._get_instance_bdms_in_multiple_cells(
                                 'ctx', ['u1']))
        bdms.assert_called_once_with('ctx', ['u1'])
        with mock.patch.object(views_servers.ViewBuilder, '_add_host_status'
                               ) as added:
            builder._add_host_status(['s'], ['i'], unknown_only=True)
        added.assert_called_once_with(['s'], ['i'], unknown_only=True)


class TestHostStatuses(_ViewTestCase):
    """Nova decides a server's host status by the first on its host."""

    def _instance(self, uuid, host, **service):
        service = dict({'forced_down': False, 'disabled': False}, **service)
        services = [mock.Mock(binary='nova-compute', **service)]
        return mock.Mock(uuid=uuid, host=host, services=services)

    def test_by_the_first_server_on_each_host(self):
        builder = server_views.ViewBuilder()
        page = [self._instance('a', 'h1', forced_down=True),
                self._instance('b', 'h1', disabled=True),
                self._instance('c', None, forced_down=True),
                self._instance('d', 'h2', disabled=True),
                self._instance('e', '', disabled=True)]
        nova = builder.compute_api.get_instances_host_statuses(page)
        # Nova's own answer for the whole page: b gets a's.
        none = fields.HostStatus.NONE
        self.assertEqual({'a': 'DOWN', 'b': 'DOWN', 'c': none,
                          'd': 'MAINTENANCE', 'e': none}, nova)
        firsts = {}
        for instance in page:
            firsts.setdefault(instance.host, instance)
        ours = server_views.host_statuses(builder, firsts)
        self.assertEqual(nova, {i.uuid: ours[i.host] for i in page})


class TestVersionGate(_ViewTestCase):

    def test_refuses_on_an_untested_nova(self):
        self.useFixture(ext_fixtures.UntestedNova())
        builder = mock.Mock()
        self.assertRaises(exception.UnsupportedNovaVersion,
                          server_views.ViewBuilder)
        self.assertRaises(exception.UnsupportedNovaVersion,
                          server_views.host_status_unknown_only, builder,
                          None)
        self.assertRaises(exception.UnsupportedNovaVersion,
                          server_views.project_id_in_url, builder, None)
        self.assertRaises(exception.UnsupportedNovaVersion,
                          server_views.host_statuses, builder, {})
        self.assertEqual([], builder.method_calls)

    def test_the_installed_nova_is_tested(self):
        server_views._check()
