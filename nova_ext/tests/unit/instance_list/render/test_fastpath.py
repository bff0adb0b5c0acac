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
"""A page's host statuses, as Nova's view gets them, from its rows."""

import datetime
from unittest import mock

import fixtures
from nova.compute import api as compute_api
from nova import context as nova_context
from nova.objects import fields

from nova_ext.instance_list.render import controller
from nova_ext.instance_list.render import fastpath
from nova_ext.instance_list.render import rows
from nova_ext.instance_list.render import view
from nova_ext.tests.unit import base


class TestHostStatuses(base.TestCase):

    def setUp(self):
        super().setUp()
        # Nova's compute API wants an RPC transport when it is made.
        self.useFixture(fixtures.MockPatchObject(
            compute_api.API, '__init__', return_value=None))
        self.context = nova_context.RequestContext('user', 'project',
                                                   is_admin=True)
        self.listing = controller.Listing(None, True, self.context, {})
        #: What each server's host's compute service is, by uuid.
        self.services = {}
        self.filled = []

    def fill_services(self, ctx, instances, cell_of):
        # As the driver's: each instance its host's services.
        self.filled.extend(i.uuid for i in instances)
        for instance in instances:
            service = dict({'forced_down': False, 'disabled': False},
                           **self.services[instance.uuid])
            instance.services = [mock.Mock(binary='nova-compute', **service)]

    def _row(self, uuid, host, **service):
        self.services[uuid] = service
        return {'uuid': uuid, 'id': 7, 'deleted': 0, 'host': host,
                'created_at': datetime.datetime(2026, 1, 1)}

    def test_the_first_row_on_each_host_alone_is_asked(self):
        listed = [self._row('a', 'h1', forced_down=True),
                  self._row('b', 'h1', disabled=True),
                  self._row('c', None, forced_down=True),
                  self._row('d', 'h2', disabled=True),
                  self._row('e', 'h1')]
        builder = view.builder()
        known = {}
        got = fastpath.host_statuses(self, builder, self.listing, listed,
                                     known=known)
        self.assertEqual(['a', 'c', 'd'], self.filled)
        # The services read, by what the driver fills them by.
        cell = rows.IndexedInstance(listed[0], None, [], []).cell_id
        self.assertEqual({(cell, 'h1'), (cell, 'h2')}, set(known))
        # Nova's answer for the whole page, every instance made.
        page = [rows.IndexedInstance(row, None, [], []) for row in listed]
        self.fill_services(self.context, page, None)
        self.assertEqual(
            builder.compute_api.get_instances_host_statuses(page), got)
        none = fields.HostStatus.NONE
        self.assertEqual({'a': 'DOWN', 'b': 'DOWN', 'c': none,
                          'd': 'MAINTENANCE', 'e': 'DOWN'}, got)

    def test_services_read_are_given_to_the_live_on_their_host(self):
        known = {}
        fastpath.host_statuses(
            self, view.builder(), self.listing,
            [self._row('a', 'h1', disabled=True)], known=known)
        page = [rows.IndexedInstance(row, None, [], []) for row in (
            self._row('b', 'h1'), dict(self._row('c', 'h1'), deleted=7),
            self._row('d', None), self._row('e', 'h3'))]
        fastpath.give_services(page, known)
        given = [i.uuid for i in page if 'services' in i]
        self.assertEqual(['b'], given)
        self.assertIs(known[(page[0].cell_id, 'h1')], page[0].services)
