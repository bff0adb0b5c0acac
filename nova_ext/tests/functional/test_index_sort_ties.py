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
"""Nova's order by each cell's own instance ids is Nova's to give.

Before microversion 2.75 Nova ignores some sort keys (``id``, ``deleted``;
``locked`` before 2.73). A list whose every key it ignores is ordered by
``created_at``, then the cell-local ``id``, both descending, then by
``uuid``: two servers of two cells created in the same second with the
same id are in uuid order. Each cell numbers its rows from 1, and a boot
of many servers gives them one second. The index cannot order them so (its
id holds the cell below the cell-local id) and hands such lists to Nova.
Every other order ends with ``uuid`` alone, and is served. Change capture
is on: each list is compared right after the writes, which its catch-up
applies.
"""

import datetime

from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova.db.main import models as nova_models
from nova import objects
import sqlalchemy as sa

from nova_ext.seams import db_writes
from nova_ext.tests.functional import test_index_parity as parity

#: Pairs of one server in each cell, at most, until one orders by uuid
#: otherwise than by cell (each does so by chance, one time in two).
ROUNDS = 24
TIED_AT = datetime.datetime(2026, 1, 1)

IGNORED = ('servers?all_tenants=1&sort_key=id',
           'servers/detail?all_tenants=1&sort_key=id',
           'servers?all_tenants=1&sort_key=deleted&sort_dir=asc',
           'servers?all_tenants=1&sort_key=id&sort_key=vcpus&limit=3')
#: Ignored before 2.73 only.
LOCKED = 'servers/detail?all_tenants=1&sort_key=locked'
ORDERED = ('servers?all_tenants=1', 'servers/detail?all_tenants=1',
           'servers?all_tenants=1&sort_key=created_at&limit=3')


CAPTURE = {'nova_ext_index': {'capture': True}}


class _SortTies(object):

    EVERY_LIST_SERVED = True

    def setUp(self):
        super().setUp()
        self.addCleanup(db_writes.detach)
        self.assertTrue(db_writes.attached())
        ctx = nova_context.get_admin_context()
        cells = sorted((c for c in objects.CellMappingList.get_all(ctx)
                        if not c.is_cell0()), key=lambda c: c.id)
        self.low, self.high = cells[0], cells[-1]
        # One server in each cell a round: the two get the same cell-local id.
        for n in range(ROUNDS):
            self.pair = [self._in_cell(cell, 'tie%d-%s' % (n, cell.name))
                         for cell in (self.low, self.high)]
            # The index puts the higher cell's first, Nova the smaller
            # uuid: they part where the higher cell's uuid is the larger.
            if self.pair[1]['id'] > self.pair[0]['id']:
                break
            # Within the project's quota and the computes' resources.
            for server in self.pair:
                self._delete_server(server)
        else:
            self.fail('no pair of %d orders by uuid otherwise than by cell'
                      % ROUNDS)
        table = nova_models.Instance.__table__
        for server, cell in zip(self.pair, (self.low, self.high)):
            with nova_context.target_cell(ctx, cell) as cctx:
                with main_db_api.get_context_manager(cctx).writer.using(
                        cctx) as session:
                    session.execute(sa.update(table)
                                    .where(table.c.uuid == server['id'])
                                    .values(created_at=TIED_AT))

    def _in_cell(self, cell, name):
        # compute<n>-1 is the compute of cell<n> (base.NovaExtTestCase).
        return self._create_server(
            name=name, host='compute%s-1' % cell.name[len('cell'):],
            networks='none')

    def assertTiesByUuid(self, answer):
        """Nova's answer orders the pair of one id by uuid."""
        low, high = self.pair
        ids = [s['id'] for s in answer.json()['servers']]
        self.assertLess(ids.index(low['id']), ids.index(high['id']))

    def test_an_order_by_cell_local_ids_is_nova_s(self):
        for version in ('2.1', '2.72'):
            self.admin_api.microversion = version
            for uri in IGNORED + (LOCKED,):
                got = self.assertSameAnswer(self.admin_api, uri,
                                            served=False)
                self.assertEqual(200, got.status_code, uri)
                if 'limit' not in uri:
                    self.assertTiesByUuid(got)

    def test_every_other_order_is_served(self):
        high = self.pair[1]
        for version in ('2.1', '2.73', 'latest'):
            self.admin_api.microversion = version
            self.admin_api.put_server(high['id'], {'server': {
                'name': 'renamed-%s' % version}})
            for uri in ORDERED + ((LOCKED,) if version != '2.1' else ()):
                got = self.assertSameAnswer(self.admin_api, uri, served=True)
                self.assertEqual(200, got.status_code, uri)
        # From 2.75 Nova refuses the keys it ignored, before any list.
        self.admin_api.microversion = '2.75'
        for uri in IGNORED[:2]:
            got = self.assertSameAnswer(self.admin_api, uri, served=False)
            self.assertEqual(400, got.status_code, uri)


class TestSortTiesIndexed(_SortTies, parity.IndexTestCase):
    """Nova renders the index's pages."""

    NOVA_EXT_OPTIONS = dict(parity.IndexTestCase.NOVA_EXT_OPTIONS, **CAPTURE)


class TestSortTiesRendered(_SortTies, parity.IndexTestCase):
    """nova_ext renders the index's pages."""

    NOVA_EXT_OPTIONS = dict(parity.FAST_OPTIONS, **CAPTURE)
    FAST_RENDER = True
