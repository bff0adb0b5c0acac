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
"""The harness targets cells as the services of a cloud do."""

import threading
import time

from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova import objects

from nova_ext import conf as ext_conf
from nova_ext.index import db as index_db
from nova_ext.instance_list import index as index_driver
from nova_ext.tests.functional import base
from nova_ext.tests.functional import fixtures as ext_fixtures


class TestCellTargets(base.NovaExtTestCase):

    def setUp(self):
        super().setUp()
        self.ctxt = nova_context.get_admin_context()
        self.celldbs = self.cell_targets.harness.__self__

    def test_the_index_is_never_the_current_cell(self):
        self.useFixture(ext_fixtures.IndexFixture(self))
        index = index_db.get_context_manager(ext_conf.CONF)
        cell = index_driver.index_cell(ext_conf.CONF)
        with nova_context.target_cell(self.ctxt, cell) as ictx:
            self.assertIs(index, main_db_api.get_context_manager(ictx))
            # What a compute or a conductor reads untargeted meanwhile.
            untargeted = main_db_api.get_context_manager(
                nova_context.get_admin_context())
            self.assertIsNot(index, untargeted)
            self.assertIn(untargeted, self.celldbs._ctxt_mgrs.values())

    def test_a_target_the_harness_gives_up_on_is_asked_again(self):
        cells = objects.CellMappingList.get_all(self.ctxt)
        wrong, errors = [], []
        deadline = time.monotonic() + 60

        def target(cell):
            while (not self.cell_targets.retried and
                   time.monotonic() < deadline):
                try:
                    with nova_context.target_cell(self.ctxt, cell) as cctxt:
                        if (cctxt.db_connection is not
                                self.celldbs._ctxt_mgrs[
                                    cell.database_connection]):
                            wrong.append(cell.name)
                        # Long enough for the others to move the switch.
                        time.sleep(0.01)
                except Exception as e:
                    errors.append(e)
                    return
        threads = [threading.Thread(target=target, args=(cells[i % 3],))
                   for i in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual([], errors)
        self.assertEqual([], wrong)
        # The premise: the harness did give up, and was asked again.
        self.assertGreater(self.cell_targets.retried, 0)

    def test_an_untargeted_read_does_not_wait_behind_the_switch(self):
        # A thread targeted at a cell holds the switch's reader lock while
        # another waits to move the switch: an untargeted read (a writer
        # of Nova's within its transaction, holding its database's write
        # lock) gets the current cell at once, as it did before the
        # mover began to wait.
        lock = self.celldbs._cell_lock
        current = self.celldbs._last_ctxt_mgr
        moving, read = threading.Event(), []

        def move():
            moving.set()
            with lock.write_lock():
                pass
        with lock.read_lock():
            mover = threading.Thread(target=move)
            mover.start()
            moving.wait(5)
            # The mover now waits for the reader lock to be given back.
            time.sleep(0.1)
            reader = threading.Thread(target=lambda: read.append(
                main_db_api.get_context_manager(
                    nova_context.get_admin_context())))
            reader.start()
            reader.join(5)
            self.assertFalse(reader.is_alive())
        mover.join(5)
        self.assertEqual([current], read)
