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
"""Stored values Nova cannot load, in the real cloud.

An access IP that is no address, written by hand into a server's cell
database (the API refuses one) and read into the index by ``nova-ext-manage
index verify --fix``, as an operator would after editing a database; a
request spec of a version this Nova does not know, written into the API
database, as a newer service would, and read into the index the same
way. nova_ext's nova-api answers every list
as the stock one does at the same moment, Nova's 500 included: it hands
those pages to Nova, its driver stays on, and a page without that server
is rendered by nova_ext.
"""

from nova_ext_tools.tests.deployment import base
from nova_ext_tools.tests.deployment import stream
from nova_ext_tools.tests.deployment import test_stream

LISTS = ('/servers?all_tenants=1&limit=1000',
         '/servers/detail?all_tenants=1&limit=1000')


class TestBadData(base.CloudTestCase):

    def setUp(self):
        super().setUp()
        admin = self.connect('admin')
        self.lister = stream.Lister(admin, self.connect('admin', stock=True))
        compute = admin.compute
        flavor = compute.find_flavor('tiny').id
        servers = [compute.create_server(
            name='bad-data-%d' % n, image_id=self.resources['image'],
            flavor_id=flavor, networks='none') for n in range(2)]
        for server in servers:
            self.addCleanup(compute.wait_for_delete, server)
            self.addCleanup(compute.delete_server, server)
        for server in servers:
            compute.wait_for_server(server)
        self.bad, self.good = [server.id for server in servers]
        self.sql = self.cloud.db.sql

    def _value(self, query, database):
        return self.sql(query, database).splitlines()[1]

    def _cell_database(self):
        url = self._value(
            "SELECT c.database_connection FROM instance_mappings m JOIN "
            "cell_mappings c ON c.id = m.cell_id WHERE m.instance_uuid = "
            "'%s'" % self.bad, 'nova_api')
        return base.database_name(url)

    def _fix_index(self):
        self.cloud.ext.command('nova-ext-manage', 'index', 'verify', '--fix')

    def assertLists(self, versions, failing):
        """Every list at ``versions`` is the stock one's; counted."""
        counted = test_stream.counters_before(self)
        sent = {True: 0, False: 0}
        for version in versions:
            for url in LISTS + ('/servers/detail?all_tenants=1&uuid=%s'
                                % self.good,):
                before = self.lister.sent
                same, answer, stock, _after = self.lister.compare(url,
                                                                  version)
                self.assertTrue(same, '%s at %s: %s' % (
                    url, version, stream.first_difference(answer, stock)))
                fails = failing and url in LISTS
                self.assertEqual(500 if fails else 200, answer[0],
                                 '%s at %s' % (url, version))
                sent[fails] += self.lister.sent - before
        now = test_stream.accounted_for(self, self.lister, counted)
        self.lister.sent = 0

        def delta(key):
            return now.get(key, 0) - counted.get(key, 0)
        self.assertEqual(0, delta('failed'))
        self.assertEqual(0, delta('latched'))
        self.assertEqual(sent[True], delta('handed'))
        self.assertEqual(sent[False], delta('rendered'))
        # Each was listed by nova_ext; a handed page is listed again for
        # Nova's view, as Instances Nova builds (unservable where it
        # cannot).
        self.assertEqual(sent[False] + 2 * sent[True],
                         delta('served') + delta('unservable'))

    def test_an_access_ip_that_is_no_address(self):
        cell = self._cell_database()
        where = "WHERE uuid = '%s'" % self.bad
        kept = self._value('SELECT HEX(access_ip_v4) FROM instances ' + where,
                           cell)
        restore = ('UPDATE instances SET access_ip_v4 = %s ' % (
            'NULL' if kept == 'NULL' else "UNHEX('%s')" % kept)) + where
        self.addCleanup(self._fix_index)
        self.addCleanup(self.sql, restore, cell)
        self.sql("UPDATE instances SET access_ip_v4 = 'not-an-address' "
                 + where, cell)
        self._fix_index()
        self.assertLists(('2.1', 'latest'), failing=True)
        self.sql(restore, cell)
        self._fix_index()
        self.assertLists(('2.1', 'latest'), failing=False)

    def test_a_request_spec_of_a_newer_version(self):
        where = "WHERE instance_uuid = '%s'" % self.bad
        kept = self._value('SELECT HEX(spec) FROM request_specs ' + where,
                           'nova_api')
        restore = ("UPDATE request_specs SET spec = CONVERT(UNHEX('%s') "
                   "USING utf8mb4) " % kept) + where
        self.addCleanup(self._fix_index)
        self.addCleanup(self.sql, restore, 'nova_api')
        self.sql('UPDATE request_specs SET spec = JSON_SET(spec, '
                 '\'$."nova_object.version"\', \'99.0\') ' + where,
                 'nova_api')
        # The index keeps each spec's digest: an edit by hand is read in by
        # a repair, as one of a cell's rows is.
        self._fix_index()
        # From 2.96 Nova's view loads every listed server's spec.
        self.assertLists(('2.96', 'latest'), failing=True)
        self.assertLists(('2.95',), failing=False)
        self.sql(restore, 'nova_api')
        self._fix_index()
        self.assertLists(('latest',), failing=False)
