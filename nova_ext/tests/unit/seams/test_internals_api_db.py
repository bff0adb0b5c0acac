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
"""What nova_ext relies on of Nova's API database transaction context.

``nova_ext.seams.internals.api_db`` decorates nova_ext's queries of
the API database with ``nova.db.api.api.context_manager``: these tests fail
when Nova's objects stop reaching the API database through it.
"""

from nova import context as nova_context
from nova.db.api import api as api_db_api
from nova.db.api import models as api_models
from nova import objects
from oslo_db.sqlalchemy import enginefacade
from oslo_utils import uuidutils
import sqlalchemy as sa

from nova_ext import exception
from nova_ext.seams.internals import api_db
from nova_ext.tests import fixtures as ext_fixtures
from nova_ext.tests.unit import base

CELLS = api_models.CellMapping.__table__
MAPPINGS = api_models.InstanceMapping.__table__


class TestContextManager(base.TestCase):

    def setUp(self):
        super().setUp()
        self.engine = self.useFixture(ext_fixtures.InMemoryDatabase(
            api_db_api.context_manager, api_models.BASE.metadata,
            tables=[CELLS, MAPPINGS])).engine
        objects.register_all()
        self.ctx = nova_context.get_admin_context()

    def test_is_an_enginefacade_transaction_context(self):
        self.assertIsInstance(api_db_api.context_manager,
                              type(enginefacade.transaction_context()))

    def test_what_a_writer_writes_novas_objects_read(self):
        uuid = uuidutils.generate_uuid()

        @api_db.writer
        def add(context):
            context.session.execute(sa.insert(MAPPINGS).values(
                instance_uuid=uuid, project_id='p1', queued_for_delete=False))
        add(self.ctx)
        self.assertEqual('p1', objects.InstanceMapping.get_by_instance_uuid(
            self.ctx, uuid).project_id)

    def test_a_reader_reads_what_novas_objects_write(self):
        mapping = objects.InstanceMapping(
            self.ctx, instance_uuid=uuidutils.generate_uuid(),
            project_id='p1')
        mapping.create()

        @api_db.reader
        def read(context):
            return context.session.execute(
                sa.select(MAPPINGS.c.instance_uuid)).all()
        self.assertEqual([(mapping.instance_uuid,)], read(self.ctx))

    def test_the_engine_novas_readers_use(self):
        # Nova's objects read in a reader transaction: on the engine
        # api_db.engine() gives.
        @api_db_api.context_manager.reader
        def bind(context):
            return context.session.get_bind()
        self.assertIs(bind(self.ctx), api_db.engine())
        self.assertIs(self.engine, api_db.engine())

    def test_cells_of_reads_novas_mappings(self):
        # Where nova_ext's catch-up finds the cell of each instance: the
        # mapping tables whole, as Nova's objects write them; an IN list
        # of three uuids is padded to four.
        building, placed, gone, cell = (uuidutils.generate_uuid()
                                        for _ in range(4))
        objects.InstanceMapping(self.ctx, instance_uuid=building,
                                project_id='p1').create()
        with self.engine.begin() as conn:
            cell_id = conn.execute(sa.insert(CELLS).values(
                uuid=cell, name='c1', transport_url='none:///',
                database_connection='sqlite://',
                disabled=False)).inserted_primary_key[0]
            conn.execute(sa.insert(MAPPINGS).values(
                instance_uuid=placed, cell_id=cell_id, project_id='p1',
                queued_for_delete=False))
        self.assertEqual({building: None, placed: cell}, api_db.cells_of(
            [building, placed, gone]))
        self.assertEqual({}, api_db.cells_of([]))


class TestVersionGate(base.TestCase):

    def test_refuses_on_an_untested_nova(self):
        self.useFixture(ext_fixtures.UntestedNova())
        called = []

        def fn(context):
            called.append(context)
        for decorate in (api_db.reader, api_db.writer):
            self.assertRaises(exception.UnsupportedNovaVersion,
                              decorate(fn), nova_context.get_admin_context())
        self.assertEqual([], called)
        self.assertRaises(exception.UnsupportedNovaVersion, api_db.engine)
        for uuids in ([], ['x']):
            self.assertRaises(exception.UnsupportedNovaVersion,
                              api_db.cells_of, uuids)

    def test_the_installed_nova_is_tested(self):
        api_db._check()
