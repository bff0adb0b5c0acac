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
"""Neutron's answers kept by nova_ext's nova-api, with the real Neutron.

The cloud's Neutron notifies (messagingv2) and nova_ext's nova-api reads
its feed (``neutron_feed_url``). A change made through Neutron's API shows
in nova_ext's very next answer, byte for byte the stock nova-api's, and
answers are reused while Neutron changes nothing.
"""

import time

from nova_ext_tools.cloud import novaext
from nova_ext_tools.tests.deployment import base
from nova_ext_tools.tests.deployment import stream
from nova_ext_tools.tests.deployment import test_stream

URL = '/servers/detail?all_tenants=1&limit=50'
CHANGES = 12


class TestNeutronFeed(base.CloudTestCase):

    def test_neutron_changes_show_at_once(self):
        admin = self.connect('admin')
        lister = stream.Lister(admin, self.connect('admin', stock=True))
        server, group, port = self._server_in_group(admin, 'feed-server',
                                                    'feed-0')
        network = admin.network
        # A worker proves nothing for as long after it first bound its
        # queue, which its first detailed page does.
        warming = stream.Lister(admin, self.connect('admin', stock=True))
        for _ in range(8):
            warming.compare(URL, 'latest', attempts=1)
        time.sleep(novaext.FEED_CALL_TIMEOUT + 1)
        counted = test_stream.counters_before(self)
        for n in range(CHANGES):
            if n % 2:
                network.update_security_group(group, name='feed-%d' % n)
            else:
                network.update_port(port, security_group_ids=(
                    [group.id] if n % 4 else [group.id, self._default(
                        network, server)]))
            want = 'feed-%d' % (n if n % 2 else n - 1 if n else 0)
            # Right after Neutron answered the change, unchanged since.
            for _ in range(3):
                same, answer, before, after = lister.compare(
                    URL, 'latest', attempts=1)
                self.assertTrue(same, stream.first_difference(answer,
                                                              before))
                self.assertIn(b'"%s"' % want.encode(), answer[1])
        now = test_stream.accounted_for(self, lister, counted)
        # A cloud whose nova-api listed nothing yet has no counters.
        kept, asked, rendered = (
            now.get(k, 0) - counted.get(k, 0)
            for k in ('groups_kept', 'groups_asked', 'rendered'))
        self.assertEqual(lister.sent, rendered)
        self.assertEqual(lister.sent, kept + asked)
        # Each change is asked for at least once; the lists after it in the
        # same worker reuse the answer.
        self.assertGreaterEqual(asked, CHANGES)
        self.assertGreater(kept, 0)

    def test_pages_of_servers_on_kept_pages(self):
        # A page whose servers were on pages kept at the same epoch has
        # their groups from those; Neutron is asked for the others alone.
        admin = self.connect('admin')
        lister = stream.Lister(admin, self.connect('admin', stock=True))
        group = self._group(admin.network, 'feed-pages')
        servers = [self._server(admin, 'feed-page-%d' % n)
                   for n in range(1, 5)]
        for server in servers:
            admin.compute.wait_for_server(server, wait=300)
            self._port(admin.network, server, group)
        url = ('/servers/detail?all_tenants=1&name=%%5Efeed-page'
               '&sort_key=display_name&limit=%d')
        time.sleep(novaext.FEED_CALL_TIMEOUT + 1)
        counted = test_stream.counters_before(self)
        # The first of a page sorted by name renamed to be its last: the
        # next page of three brings a server no page showed yet.
        for limit, rename in ((3, None), (2, None), (3, 'feed-page-0'),
                              (4, None)):
            if rename:
                admin.compute.update_server(servers[-1], name=rename)
            for _ in range(3):
                same, answer, before, after = lister.compare(
                    url % limit, 'latest', attempts=1)
                self.assertTrue(same, stream.first_difference(answer,
                                                              before))
                # Not vacuous: each server of the page in the group.
                self.assertEqual(limit, answer[1].count(b'"feed-pages"'))
        now = test_stream.accounted_for(self, lister, counted)
        kept, asked, rendered = (
            now.get(k, 0) - counted.get(k, 0)
            for k in ('groups_kept', 'groups_asked', 'rendered'))
        print('pages of servers on kept pages: %d sent, %d kept, %d asked'
              % (lister.sent, kept, asked))
        self.assertEqual(lister.sent, rendered)
        self.assertEqual(lister.sent, kept + asked)

    def _server_in_group(self, admin, name, group_name):
        """A new server, with a port in a new group: (server, group, port)."""
        server = self._server(admin, name)
        admin.compute.wait_for_server(server, wait=300)
        group = self._group(admin.network, group_name)
        return server, group, self._port(admin.network, server, group)

    def _server(self, admin, name):
        server = admin.compute.create_server(
            name=name, image_id=self.resources['image'],
            flavor_id=admin.compute.find_flavor('tiny').id,
            networks='none')
        self.addCleanup(admin.compute.delete_server, server)
        return server

    def _group(self, network, name):
        group = network.create_security_group(name=name)
        self.addCleanup(network.delete_security_group, group)
        return group

    def _port(self, network, server, group):
        # As the benchmark's ports: the server's id as device id, no device
        # owner, so that Neutron sends Nova no event of its own.
        port = network.create_port(
            network_id=next(network.networks(is_router_external=False)).id,
            device_id=server.id, security_group_ids=[group.id])
        self.addCleanup(network.delete_port, port)
        return port

    @staticmethod
    def _default(network, server):
        return next(network.security_groups(
            name='default', project_id=server.project_id)).id
