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
"""Nova's order by each cell's own instance ids, in the real cloud.

A list whose every sort key Nova ignores (``sort_key=id`` before 2.75,
``locked`` before 2.73) is ordered by ``created_at``, the cell-local id
and the uuid. One server in each cell, given one ``created_at`` and one id
in their cell databases (read into the index by ``nova-ext-manage index
verify --fix``, as after an edit by hand), as servers booted together in
two cells can have: nova_ext's nova-api answers such lists as the stock
one does at the same moment, having handed them to Nova, and renders
every other order itself.
"""

from nova_ext_tools.tests.deployment import base
from nova_ext_tools.tests.deployment import stream
from nova_ext_tools.tests.deployment import test_stream

#: Pairs made, at most, until one orders by uuid otherwise than by cell.
PAIRS = 12
#: Later than any other server's: the pair comes first on each page.
TIED = ("UPDATE instances SET id = %d, created_at = '2036-01-01 00:00:00' "
        "WHERE uuid = '%s'")
IGNORED = (('/servers?all_tenants=1&sort_key=id', '2.1'),
           ('/servers/detail?all_tenants=1&sort_key=id', '2.74'),
           ('/servers/detail?all_tenants=1&sort_key=locked', '2.72'))
ORDERED = (('/servers?all_tenants=1', '2.1'),
           ('/servers/detail?all_tenants=1', 'latest'),
           ('/servers/detail?all_tenants=1&sort_key=locked', '2.73'))


class TestSortTies(base.CloudTestCase):

    def setUp(self):
        super().setUp()
        admin = self.connect('admin')
        self.lister = stream.Lister(admin, self.connect('admin', stock=True))
        self.sql = self.cloud.db.sql
        # (host, database) of the lower and the higher cell mapping id.
        self.cells = [(host, database)
                      for _name, host, database in base.cells(self.cloud)]
        compute = admin.compute
        flavor = compute.find_flavor('tiny').id
        for n in range(PAIRS):
            pair = [compute.create_server(
                name='tie-%d-%s' % (n, host), image_id=self.resources['image'],
                flavor_id=flavor, networks='none',
                availability_zone='nova:%s' % host)
                for host, _database in self.cells]
            for server in pair:
                self.addCleanup(compute.wait_for_delete, server)
                self.addCleanup(compute.delete_server, server)
            for server in pair:
                compute.wait_for_server(server)
            # The index puts the higher cell's first, Nova the smaller uuid.
            if pair[1].id > pair[0].id:
                break
        else:
            self.fail('no pair of %d orders by uuid otherwise than by cell'
                      % PAIRS)
        self.pair = [server.id for server in pair]
        tied = 1 + max(int(self.sql('SELECT MAX(id) FROM instances',
                                    database).splitlines()[1])
                       for _host, database in self.cells)
        for uuid, (_host, database) in zip(self.pair, self.cells):
            self.sql(TIED % (tied, uuid), database)
        self.cloud.ext.command('nova-ext-manage', 'index', 'verify', '--fix')

    def _compare(self, requests):
        answers = []
        for url, version in requests:
            same, answer, stock, _after = self.lister.compare(url, version)
            self.assertTrue(same, '%s at %s: %s' % (
                url, version, stream.first_difference(answer, stock)))
            self.assertEqual(200, answer[0], '%s at %s' % (url, version))
            answers.append(answer[1])
        return answers

    def test_an_order_by_cell_local_ids_is_nova_s(self):
        counted = test_stream.counters_before(self)
        for body in self._compare(IGNORED):
            # The tie, in uuid order: where the index's ids order by cell.
            low, high = (body.index(uuid.encode()) for uuid in self.pair)
            self.assertLess(low, high)
        now = test_stream.accounted_for(self, self.lister, counted)
        handed = self.lister.sent

        def delta(key):
            return now.get(key, 0) - counted.get(key, 0)
        self.assertEqual((0, handed, 0),
                         (delta('rendered'), delta('unservable'),
                          delta('failed')))
        counted = now
        self.lister.sent = 0
        self._compare(ORDERED)
        now = test_stream.accounted_for(self, self.lister, counted)
        self.assertEqual((self.lister.sent, 0),
                         (delta('rendered'), delta('unservable')))
        self.assertEqual([], self.nova_ext_errors())
