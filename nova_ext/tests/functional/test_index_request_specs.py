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
"""The index follows the request specs a list shows from 2.96.

Capture marks a spec Nova writes, the index reads it again with its
server and keeps its digest, and a page reads its servers' digests with
their rows: from the API database it reads only the specs whose digest it
has not kept. A spec written by hand is found by ``index verify``, as any
such edit of a cell's rows; a row whose book holds no spec digest has its
spec digested in the API database. Every answer is Nova's.
"""

import types

import fixtures
from nova import context as nova_context
from nova.db.api import api as api_db_api
from nova.db.api import models as api_models
from nova import objects
from oslo_serialization import jsonutils
import sqlalchemy as sa

from nova_ext import conf as ext_conf
from nova_ext.index.apply import source
from nova_ext.index.apply import writer
from nova_ext.index import db
from nova_ext.index import generation
from nova_ext.index.repair import sync
from nova_ext.index.repair import verify
from nova_ext.index import schema
from nova_ext.instance_list.render import request_specs
from nova_ext.seams import db_writes
from nova_ext.tests.functional import test_index_parity as parity

DETAIL = 'servers/detail?all_tenants=1'
CAPTURE = {'nova_ext_index': {'capture': True}}
LISTS = ('servers?all_tenants=1', DETAIL)


class _FollowedSpecs(object):

    EVERY_LIST_SERVED = True
    FAST_RENDER = True

    def setUp(self):
        super().setUp()
        self.addCleanup(db_writes.detach)
        self.assertTrue(db_writes.attached())
        self.zoned = self._create_server(name='zoned', host='compute1-1',
                                         networks='none', az='nova')
        self.other = self._create_server(name='other', host='compute2-1',
                                         networks='none')
        self.sync_index()
        self.admin_api.microversion = '2.100'
        for uri in LISTS:
            self.assertSameAnswer(self.admin_api, uri, served=True)
        self.ctx = nova_context.get_admin_context()
        # The page's reads of the API database, not those of the index's
        # own reads of the servers (source.py), made through the original.
        stored = request_specs.stored_specs
        self.useFixture(fixtures.MockPatchObject(
            source, 'stored_specs', types.SimpleNamespace(
                stored=stored.stored)))
        self.read = {}
        for name in ('stored', 'digests', 'combined'):
            self.read[name] = self.useFixture(fixtures.MockPatchObject(
                stored, name, wraps=getattr(stored, name))).mock

    def reads(self, name):
        return [sorted(c.args[1]) for c in self.read[name].call_args_list]

    def pinned(self, uuid):
        got = self.assertSameAnswer(self.admin_api, DETAIL, served=True)
        return {s['id']: s['pinned_availability_zone']
                for s in got.json()['servers']}[uuid]

    def book_digest(self, uuid):
        book = schema.INSTANCES
        with self.index.engine.connect() as conn:
            return conn.execute(sa.select(book.c.digest).where(
                book.c.uuid == uuid)).scalar_one()

    def stored_zone(self, zone):
        """The zoned server's spec pinned to ``zone``, written by hand.

        On a connection of its own, as a database client's: no session of
        Nova's, which capture would see.
        """
        specs = api_models.RequestSpec.__table__
        where = specs.c.instance_uuid == self.zoned['id']
        with api_db_api.get_engine().begin() as conn:
            data = jsonutils.loads(conn.execute(
                sa.select(specs.c.spec).where(where)).scalar_one())
            data['nova_object.data']['availability_zone'] = zone
            conn.execute(
                specs.update().where(where).values(spec=jsonutils.dumps(data)))

    def verify(self, fix=False):
        reports = [verify.verify_cell(self.ctx, ext_conf.CONF, cell, fix=fix)
                   for cell in sync.cells(self.ctx)]
        return ([u for r in reports for u in r.samples.get('stale', [])],
                sum(r.counts['fixed'] for r in reports))

    def test_a_page_reads_no_spec_it_has_seen(self):
        for uri in LISTS:
            self.assertSameAnswer(self.admin_api, uri, served=True)
        self.assertEqual(([], [], []), (self.reads('stored'),
                                        self.reads('digests'),
                                        self.reads('combined')))

    def test_a_spec_nova_writes_is_followed(self):
        self.assertEqual('nova', self.pinned(self.zoned['id']))
        spec = objects.RequestSpec.get_by_instance_uuid(self.ctx,
                                                        self.zoned['id'])
        spec.availability_zone = 'elsewhere'
        spec.save()
        before = self.book_digest(self.zoned['id'])
        # Marked by capture; the list's catch-up reads the server and its
        # spec again, and the page reads that one spec's text alone.
        self.assertEqual('elsewhere', self.pinned(self.zoned['id']))
        self.assertEqual([[self.zoned['id']]], self.reads('stored'))
        self.assertNotEqual(writer.book_spec_digest(before),
                            writer.book_spec_digest(
                                self.book_digest(self.zoned['id'])))
        for uri in LISTS:
            self.assertSameAnswer(self.admin_api, uri, served=True)
        self.assertEqual(([], []), (self.reads('digests'),
                                    self.reads('combined')))
        self.assertEqual(([], 0), self.verify())

    def test_a_spec_written_by_hand_is_found_by_verify(self):
        self.stored_zone('by-hand')
        stale, fixed = self.verify()
        self.assertEqual(([self.zoned['id']], 0), (stale, fixed))
        self.assertEqual(1, self.verify(fix=True)[1])
        self.assertEqual('by-hand', self.pinned(self.zoned['id']))
        self.assertEqual(([], 0), self.verify())

    def test_a_row_whose_book_holds_no_spec_digest(self):
        # Its book digest ends before the spec's part: the page digests
        # that spec in the API database.
        uuid = self.zoned['id']
        book = schema.INSTANCES
        old = self.book_digest(uuid)[:writer.SPEC_AT - 1]
        with db.begin_write(self.index.engine) as conn:
            # As a writer of the index does: the generation moves.
            generation.touched(conn, [uuid])
            conn.execute(sa.update(book).where(book.c.uuid == uuid).values(
                digest=old))
        self.stored_zone('unfollowed')
        self.assertEqual('unfollowed', self.pinned(uuid))
        self.assertIn([uuid], self.reads('digests') + self.reads('combined'))
        # verify finds the row short of a part, and rewrites it.
        stale, _fixed = self.verify(fix=True)
        self.assertEqual([uuid], stale)
        self.assertIsNotNone(writer.book_spec_digest(self.book_digest(uuid)))
        self.read['digests'].reset_mock()
        self.read['combined'].reset_mock()
        self.assertEqual('unfollowed', self.pinned(uuid))
        self.assertEqual(([], []), (self.reads('digests'),
                                    self.reads('combined')))


class TestFollowedSpecsRendered(_FollowedSpecs, parity.IndexTestCase):
    """nova_ext renders each page from the index's rows."""

    NOVA_EXT_OPTIONS = dict(parity.FAST_OPTIONS, **CAPTURE)


class TestFollowedSpecsCached(parity._RenderCacheMixin,
                              TestFollowedSpecsRendered):
    """And keeps pages and documents."""

    NOVA_EXT_OPTIONS = dict(parity.CACHED_OPTIONS, **CAPTURE)
