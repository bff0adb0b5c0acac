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
"""What nova_ext relies on of Nova's cell caches and scatter-gather.

``nova_ext.seams.internals.cells`` reads ``nova.context.CELLS``,
writes ``nova.context.CELL_CACHE`` and asks cells through
``scatter_gather_cells``: these tests fail when Nova stops finding cells
and their databases there, or marks a cell that gave no answer otherwise.
"""

import inspect
import threading
from unittest import mock

import fixtures
from nova.compute import instance_list as nova_instance_list
from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova import exception as nova_exception
from nova import objects
from oslo_utils import uuidutils

from nova_ext import exception
from nova_ext.seams.internals import cells
from nova_ext.tests import fixtures as ext_fixtures
from nova_ext.tests.unit import base


def _cell(uuid=None):
    return objects.CellMapping(
        uuid=uuid or uuidutils.generate_uuid(), name='c',
        database_connection='sqlite://', transport_url='none:///',
        disabled=False)


class TestCellCache(base.TestCase):

    def setUp(self):
        super().setUp()
        objects.register_all()
        # Nova's own per-process caches, emptied for the test.
        self.useFixture(fixtures.MonkeyPatch('nova.context.CELL_CACHE', {}))
        self.useFixture(fixtures.MonkeyPatch('nova.context.CELLS', []))

    def test_target_cell_takes_the_cached_database(self):
        self.assertIsInstance(nova_context.CELL_CACHE, dict)
        cell = _cell()
        ours = main_db_api.create_context_manager('sqlite://')
        cells.cache_database(cell.uuid, ours)
        ctx = nova_context.get_admin_context()
        with nova_context.target_cell(ctx, cell) as cctx:
            self.assertIs(ours, cctx.db_connection)
            # What Nova's database API then runs the cell's queries on.
            self.assertIs(ours, main_db_api.get_context_manager(cctx))
        self.assertEqual((ours, None), nova_context.CELL_CACHE[cell.uuid])

    def test_set_target_cell_reads_the_cache_first(self):
        # The cached database is taken as it is, never replaced by one
        # made from the mapping's own database_connection.
        source = inspect.getsource(nova_context.set_target_cell)
        self.assertIn('CELL_CACHE[cell_mapping.uuid]', source)
        cell = _cell()
        cells.cache_database(cell.uuid, mock.sentinel.database)
        ctx = nova_context.get_admin_context()
        nova_context.set_target_cell(ctx, cell)
        self.assertIs(mock.sentinel.database, ctx.db_connection)

    def test_all_cells_are_novas_list_cells(self):
        found = [_cell(), _cell()]
        get_all = self.useFixture(fixtures.MockPatchObject(
            objects.CellMappingList, 'get_all', return_value=found)).mock
        self.assertEqual(found, cells.all_cells())
        self.assertEqual(found, cells.all_cells())
        # Loaded once per process, as Nova's list loads them.
        get_all.assert_called_once()
        self.assertEqual(found, nova_context.CELLS)
        source = inspect.getsource(
            nova_instance_list.get_instance_objects_sorted)
        self.assertIn('context.load_cells()', source)
        self.assertIn('cell_mappings = context.CELLS', source)


class TestScatter(base.TestCase):
    """Nova's scatter-gather, its timeout, and its marks of no answer."""

    def setUp(self):
        super().setUp()
        objects.register_all()
        self.useFixture(fixtures.MonkeyPatch('nova.context.CELL_CACHE', {}))
        self.cells = [_cell(), _cell(), _cell()]
        for cell in self.cells:
            cells.cache_database(
                cell.uuid, main_db_api.create_context_manager('sqlite://'))
        self.ctx = nova_context.get_admin_context()

    def test_each_cell_answers_or_fails(self):
        answers, failing, slow = self.cells
        release = threading.Event()
        self.addCleanup(release.set)

        def ask(cctxt, suffix):
            if cctxt.cell_uuid == failing.uuid:
                raise nova_exception.NovaException('gone')
            if cctxt.cell_uuid == slow.uuid:
                release.wait(10)
            return cctxt.cell_uuid + suffix

        results = cells.scatter(self.ctx, self.cells, ask, '!', timeout=0.5)
        self.assertEqual(answers.uuid + '!', results[answers.uuid])
        self.assertIsNone(cells.failure(results[answers.uuid]))
        self.assertEqual('gone', str(cells.failure(results[failing.uuid])))
        self.assertEqual('timed out', cells.failure(results[slow.uuid]))
        for result in ([], 0, None, {}):
            self.assertIsNone(cells.failure(result))

    def test_novas_timeout_by_default(self):
        params = list(inspect.signature(
            nova_context.scatter_gather_cells).parameters)
        self.assertEqual(['context', 'cell_mappings', 'timeout', 'fn'],
                         params[:4])
        self.assertIsInstance(nova_context.CELL_TIMEOUT, int)
        seen = []
        real = nova_context.scatter_gather_cells

        def scatter_gather_cells(ctx, cell_mappings, timeout, fn, *args):
            seen.append(timeout)
            return real(ctx, cell_mappings, timeout, fn, *args)
        self.useFixture(fixtures.MonkeyPatch(
            'nova.context.scatter_gather_cells', scatter_gather_cells))
        cells.scatter(self.ctx, self.cells[:1], lambda cctxt: True)
        self.assertEqual([nova_context.CELL_TIMEOUT], seen)


class TestVersionGate(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MonkeyPatch('nova.context.CELL_CACHE', {}))

    def test_refuses_on_an_untested_nova(self):
        self.useFixture(ext_fixtures.UntestedNova())
        self.assertRaises(exception.UnsupportedNovaVersion,
                          cells.cache_database, 'u1', mock.sentinel.db)
        self.assertRaises(exception.UnsupportedNovaVersion, cells.all_cells)
        self.assertRaises(exception.UnsupportedNovaVersion, cells.scatter,
                          'ctx', [], len)
        self.assertRaises(exception.UnsupportedNovaVersion, cells.failure,
                          None)
        self.assertEqual({}, nova_context.CELL_CACHE)

    def test_the_installed_nova_is_tested(self):
        cells._check()
