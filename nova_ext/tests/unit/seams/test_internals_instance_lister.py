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
"""What nova_ext relies on of Nova's instance lister.

``nova_ext.seams.internals.instance_lister`` subclasses
``nova.compute.instance_list.InstanceLister``: these tests run Nova's
lister over real cells (the index, in Nova's schema, and a database
without it) and fail when Nova stops asking ``get_marker_record`` and
``get_by_filters`` of it, or stops telling a failed or silent cell in
``cells_failed`` and ``cells_timed_out``.
"""

import datetime
import inspect
import time

import fixtures
from nova.compute import instance_list as nova_instance_list
from nova.compute import multi_cell_list
from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova import exception as nova_exception
from nova import objects
from oslo_utils import uuidutils
import sqlalchemy as sa

from nova_ext import exception
from nova_ext.index.apply import source
from nova_ext.instance_list import index
from nova_ext.seams.internals import cells
from nova_ext.seams.internals import instance_lister
from nova_ext.tests import fixtures as ext_fixtures
from nova_ext.tests.unit.index import base as index_base


class TestInstanceLister(index_base.IndexDBTestCase):

    def setUp(self):
        super().setUp()
        objects.register_all()
        self.useFixture(fixtures.MonkeyPatch('nova.context.CELL_CACHE', {}))
        self.ctx = nova_context.get_admin_context()
        # Nova's query picks its regular expression operator by it.
        self.flags(connection='sqlite://', group='database')
        # The index: a cell in Nova's schema, empty.
        self.cell = index.index_cell(self.conf.conf)

    def list(self, lister, marker=None):
        return list(lister.get_records_sorted(
            self.ctx, {}, 10, marker, columns_to_join=[],
            cell_down_support=True))

    def test_a_cell_that_answers(self):
        lister = instance_lister.InstanceLister(
            ['created_at'], ['desc'], cells=[self.cell],
            batch_size=instance_lister.batch_size(10, [self.cell]))
        self.assertEqual([], self.list(lister))
        self.assertEqual((False, False, None),
                         (lister.timed_out, lister.failed, lister.error))

    def test_a_cell_that_fails_keeps_its_error(self):
        broken = objects.CellMapping(
            uuid=uuidutils.generate_uuid(), name='broken',
            database_connection='sqlite://', transport_url='none:///',
            disabled=False)
        cells.cache_database(broken.uuid,
                             main_db_api.create_context_manager('sqlite://'))
        lister = instance_lister.InstanceLister(None, None, cells=[broken])
        self.assertEqual([], self.list(lister))
        self.assertEqual((False, True), (lister.timed_out, lister.failed))
        self.assertIn('no such table: instances', str(lister.error))

    def test_a_slow_cell_times_out(self):
        # Nova checks its timeout as each row comes: a row that comes
        # after it is a cell that did not answer.
        self.useFixture(fixtures.MonkeyPatch('nova.context.CELL_TIMEOUT',
                                             0.1))

        class Slow(instance_lister.InstanceLister):
            def get_by_filters(self, *args, **kwargs):
                time.sleep(0.3)
                return [{'uuid': 'u1', 'created_at': None, 'id': 1}]

        lister = Slow(None, None, cells=[self.cell])
        self.assertEqual([], self.list(lister))
        self.assertEqual((True, False), (lister.timed_out, lister.failed))

    def test_the_marker_is_asked_of_marker_record(self):
        asked = []

        class Elsewhere(instance_lister.InstanceLister):
            def marker_record(self, ctx, marker):
                asked.append(marker)
                raise nova_exception.MarkerNotFound(marker=marker)

        lister = Elsewhere(None, None, cells=[self.cell])
        self.assertRaises(nova_exception.MarkerNotFound, self.list, lister,
                          marker='m1')
        self.assertEqual(['m1'], asked)

    def test_novas_names(self):
        self.assertIsInstance(
            inspect.getattr_static(multi_cell_list.CrossCellLister,
                                   'cells_failed'), property)
        self.assertIsInstance(
            inspect.getattr_static(multi_cell_list.CrossCellLister,
                                   'cells_timed_out'), property)
        self.assertEqual(
            ['self', 'sort_keys', 'sort_dirs', 'cells', 'batch_size'],
            list(inspect.signature(
                nova_instance_list.InstanceLister.__init__).parameters))
        self.assertEqual(['limit', 'cells'], list(inspect.signature(
            nova_instance_list.get_instance_list_cells_batch_size
        ).parameters))

    def test_the_sort_keys_order_every_row(self):
        self.assertEqual(['created_at', 'id', 'uuid'],
                         instance_lister.sort_keys(None, None))
        self.assertEqual(['display_name', 'uuid', 'created_at', 'id'],
                         instance_lister.sort_keys(['display_name'], ['asc']))
        self.assertEqual(['uuid', 'created_at', 'id'],
                         instance_lister.sort_keys(['uuid'], ['asc']))
        # Without the directions (the list's narrowed columns).
        self.assertEqual(['display_name', 'host', 'uuid', 'created_at',
                          'id'],
                         instance_lister.sort_keys(['display_name', 'host'],
                                                   None))
        # Nova's query orders by them: rows the request's key does not tell
        # apart come in the order of the next key (the uuid, which the
        # lister sorts ascending whatever the request's direction).
        made = sorted(uuidutils.generate_uuid() for _ in range(3))
        with self.engine.begin() as conn:
            conn.execute(sa.insert(source.INSTANCES), [
                {'id': n + 1, 'uuid': uuid, 'display_name': 'x',
                 'created_at': datetime.datetime(2026, 1, 1),
                 'project_id': 'p', 'deleted': 0}
                for n, uuid in enumerate(made)])
        for direction in ('asc', 'desc'):
            lister = instance_lister.InstanceLister(
                ['display_name'], [direction], cells=[self.cell],
                batch_size=instance_lister.batch_size(10, [self.cell]))
            listed = lister.get_records_sorted(
                self.ctx, {}, 10, None, columns_to_join=[],
                cell_down_support=True)
            self.assertEqual(made, [r['uuid'] for r in listed], direction)

    def test_refuses_on_an_untested_nova(self):
        self.useFixture(ext_fixtures.UntestedNova())
        self.assertRaises(exception.UnsupportedNovaVersion,
                          instance_lister.InstanceLister, None, None)
        self.assertRaises(exception.UnsupportedNovaVersion,
                          instance_lister.batch_size, 10, [self.cell])
        self.assertRaises(exception.UnsupportedNovaVersion,
                          instance_lister.sort_keys, None, None)
