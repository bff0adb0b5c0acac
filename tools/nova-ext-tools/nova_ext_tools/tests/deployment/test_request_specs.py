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
"""Request specs written by Nova's own processes, followed by the index.

A server booted into a zone shows it pinned from 2.96; unshelved with no
zone (2.91), nova-api unpins its RequestSpec and the conductor schedules
it. Each write is captured in the process that makes it; the index keeps
the digest of the spec the API database holds, and nova_ext's nova-api
answers every list as the stock one does at the same moment, rendered by
nova_ext. ``nova-ext-manage index verify`` finds nothing to repair.
"""

import hashlib

from nova_ext_tools.tests.deployment import base
from nova_ext_tools.tests.deployment import stream
from nova_ext_tools.tests.deployment import test_stream

VERSIONS = ('2.96', 'latest')


class TestRequestSpecs(base.CloudTestCase):

    def setUp(self):
        super().setUp()
        admin = self.connect('admin')
        self.lister = stream.Lister(admin, self.connect('admin', stock=True))
        self.compute = admin.compute
        server = self.compute.create_server(
            name='zoned-spec', image_id=self.resources['image'],
            flavor_id=self.compute.find_flavor('tiny').id, networks='none',
            availability_zone='nova')
        self.addCleanup(self.compute.wait_for_delete, server)
        self.addCleanup(self.compute.delete_server, server)
        self.server = self.compute.wait_for_server(server)
        self.sql = self.cloud.db.sql

    def _value(self, query, database):
        return self.sql(query, database).splitlines()[1]

    def assertFollowed(self):
        """The index keeps the digest of the spec the API database holds.

        As the index's writer digests it: the repr of the stored text.
        """
        where = "WHERE instance_uuid = '%s'" % self.server.id
        stored = bytes.fromhex(self._value(
            'SELECT HEX(spec) FROM request_specs ' + where, 'nova_api'))
        want = hashlib.blake2b(repr(stored.decode('utf-8')).encode(),
                               digest_size=10).hexdigest()
        digest = self._value("SELECT digest FROM nova_ext_index_instances "
                             "WHERE uuid = '%s'" % self.server.id,
                             'nova_ext_index')
        self.assertEqual(want, digest[-20:])

    def assertPinned(self, zone):
        """Every list answer is stock's, rendered by nova_ext, ``zone``."""
        counted = test_stream.counters_before(self)
        url = '/servers/detail?all_tenants=1&uuid=%s' % self.server.id
        shown = b'"pinned_availability_zone": %s' % (
            b'null' if zone is None else b'"%s"' % zone.encode())
        for version in VERSIONS:
            for uri in (url, '/servers/detail?all_tenants=1&limit=1000',
                        '/servers?all_tenants=1&limit=1000'):
                same, answer, stock, _after = self.lister.compare(uri,
                                                                  version)
                self.assertTrue(same, '%s at %s: %s' % (
                    uri, version, stream.first_difference(answer, stock)))
                if uri == url:
                    self.assertIn(shown, answer[1])
        now = test_stream.accounted_for(self, self.lister, counted)
        self.assertEqual(self.lister.sent,
                         now.get('rendered', 0) - counted.get('rendered', 0))
        self.lister.sent = 0

    def test_a_spec_unpinned_by_nova_api(self):
        self.assertFollowed()
        self.assertPinned('nova')
        self.compute.shelve_server(self.server)
        self.compute.wait_for_server(self.server, status='SHELVED_OFFLOADED',
                                     wait=300)
        self.compute.post(
            '/servers/%s/action' % self.server.id,
            json={'unshelve': {'availability_zone': None}},
            headers={'OpenStack-API-Version': 'compute 2.91'})
        self.compute.wait_for_server(self.server, status='ACTIVE', wait=300)
        self.assertFollowed()
        self.assertPinned(None)
        done = self.cloud.ext.command('nova-ext-manage', 'index', 'verify',
                                      check=False)
        self.assertEqual(0, done.returncode, done.stdout + done.stderr)
