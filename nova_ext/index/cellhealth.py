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
"""Which cells are down, as Nova's list would find them, checked cheaply.

Nova's list answers differently when a cell database does not respond:
minimal records for its instances from microversion 2.69, nothing (or an
error) before. The index does not depend on the cells to answer, so it
asks them, in parallel, with a trivial query, at most every
``[nova_ext_index]cell_check_interval`` seconds; while any cell is down,
the index hands list requests to Nova, whose answer is then by definition
the one Nova gives.

A request does not wait for the check while the last one is recent: once
it is ``cell_check_interval`` old, the next request starts one in the
background and goes on with the last result, so that no request pays for
a probe of every cell (about 120 ms at 32 cells in the functional harness,
and up to ``query_timeout`` while a cell hangs). A result older than
``cell_check_interval + query_timeout`` (a process that was idle, or a
check that never finished) is not used: the request checks, and waits.
With ``cell_check_interval = 0`` every request checks, and waits.
"""

import threading
import time

from nova import context as nova_context
from nova.db.main import api as main_db_api
from oslo_log import log as logging
import sqlalchemy as sa

LOG = logging.getLogger(__name__)


class CellHealth(object):

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self._lock = threading.Lock()
        self._checked = float('-inf')
        self._down = []
        #: The thread of the check running in the background, if any.
        self._refresher = None

    def _probe(self, cctxt):
        # A method, not a function: Nova's DownCellFixture, which tests use
        # to take cells down, only stubs bound methods.
        with main_db_api.get_context_manager(cctxt).reader.using(cctxt) as s:
            s.execute(sa.text('SELECT 1'))
        return True

    def down_cells(self, ctx, conf):
        """Uuids of the cells that did not answer the latest probe."""
        interval = conf.nova_ext_index.cell_check_interval
        with self._lock:
            age = self.clock() - self._checked
            if age < interval:
                return list(self._down)
            if interval and age < interval + conf.nova_ext_index.query_timeout:
                self._refresh_in_background(conf)
                return list(self._down)
        return self._check(ctx, conf)

    def _refresh_in_background(self, conf):
        # Called with the lock held. A forked process inherits the thread
        # object of a check running in its parent, but not the thread:
        # is_alive() is then False, and it checks itself.
        if self._refresher is not None and self._refresher.is_alive():
            return
        self._refresher = threading.Thread(
            target=self._check_quietly, args=(conf,),
            name='nova-ext-cell-check', daemon=True)
        self._refresher.start()

    def _check_quietly(self, conf):
        try:
            self._check(nova_context.get_admin_context(), conf)
        except Exception:
            # The result is left to age; past its limit, a request checks
            # again and meets the error itself.
            LOG.exception('nova_ext index: checking the cells failed')

    def _check(self, ctx, conf):
        nova_context.load_cells()
        results = nova_context.scatter_gather_cells(
            ctx, nova_context.CELLS, conf.nova_ext_index.query_timeout,
            self._probe)
        down = sorted(uuid for uuid, result in results.items()
                      if nova_context.is_cell_failure_sentinel(result))
        with self._lock:
            if down != self._down:
                LOG.info('nova_ext index: cells down: %s', down or 'none')
            self._down, self._checked = down, self.clock()
        return list(down)
