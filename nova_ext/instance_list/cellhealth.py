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
"""Which cells are down, as Nova's list finds them in the same request.

Nova's list answers differently when a cell database does not respond:
minimal records for its instances from microversion 2.69, nothing (or an
error) before. Nova learns it from the request's own query of each cell.
The index does not need the cells to answer, so every list request it
would serve asks each cell, in parallel, a trivial query first; if any
cell does not answer, the index hands the request to Nova, whose answer
is then by definition the one Nova gives. No earlier check stands in for
the request's own: a cell that went down a moment ago is down for this
request, as it is for Nova's.
"""

import threading
import weakref

import futurist
from nova.db.main import api as main_db_api
from oslo_log import log as logging

from nova_ext.instance_list import direct_reads
from nova_ext import per_process
from nova_ext.seams.internals import cells as nova_cells

LOG = logging.getLogger(__name__)
#: Checks begun at once in a process (:meth:`CellHealth.begin`); more wait
#: for one of them to end.
CHECKS_AT_ONCE = 8

_POOLS = per_process.Registry()


def _pool():
    """This process's pool for checks begun early, made on first use."""
    return _POOLS.get(None, lambda: futurist.ThreadPoolExecutor(
        max_workers=CHECKS_AT_ONCE))


def shutdown():
    """Stop the pool's threads once their checks are done (tests)."""
    for pool in _POOLS.clear():
        pool.shutdown(wait=True)


class CellHealth(object):

    def __init__(self):
        self._lock = threading.Lock()
        self._down = []
        #: Checks made (each a query to every cell).
        self.checks = 0
        #: {request context: the future of its check begun early}.
        self._begun = weakref.WeakKeyDictionary()

    def begin(self, ctx, conf):
        """Begin ``ctx``'s check now, on a thread of this process's pool.

        For a request that reads something else first whose order with
        the check does not matter (the build requests): the check then
        costs it no time of its own. :meth:`down_cells` of the same
        context gives its answer.
        """
        future = _pool().submit(self._check_for, ctx, conf)
        with self._lock:
            self._begun[ctx] = future

    def _check_for(self, ctx, conf):
        # The pool's thread logs with the request's id, as the request would.
        ctx.update_store()
        return self._check(ctx, conf)

    def begun(self, ctx):
        """Whether a check of ``ctx``'s was begun and not yet given."""
        with self._lock:
            return ctx in self._begun

    def _probe(self, cctxt):
        # A method, not a function: Nova's DownCellFixture, which tests use
        # to take cells down, only stubs bound methods. The engine Nova's
        # list query of the cell reads (``reader.allow_async``: the replica
        # [database]slave_connection names, if any), asked on a connection
        # of the check's own (direct_reads).
        engine = main_db_api.get_context_manager(cctxt).reader.get_engine()
        direct_reads.ask(engine)
        return True

    def down_cells(self, ctx, conf):
        """Uuids of the cells that do not answer now.

        The answer of the check :meth:`begin` began for ``ctx``, if any:
        given once, a second call checks again.
        """
        with self._lock:
            future = self._begun.pop(ctx, None)
        if future is not None:
            return future.result()
        return self._check(ctx, conf)

    def _check(self, ctx, conf):
        results = nova_cells.scatter(
            ctx, nova_cells.all_cells(), self._probe,
            timeout=conf.nova_ext_index.query_timeout)
        down = sorted(uuid for uuid, result in results.items()
                      if nova_cells.failure(result) is not None)
        with self._lock:
            self.checks += 1
            if down != self._down:
                LOG.info('nova_ext index: cells down: %s', down or 'none')
                self._down = down
        return down
