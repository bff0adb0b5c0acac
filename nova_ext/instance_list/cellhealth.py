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
would serve asks each cell a trivial query first; if any cell does not
answer within ``query_timeout``, the index hands the request to Nova,
whose answer is then by definition the one Nova gives. No earlier check
stands in for the request's own: a cell that went down a moment ago is
down for this request, as it is for Nova's.

The cells are asked on threads of this process's pool, in groups of
:data:`CELLS_PER_THREAD` one after another, the groups in parallel. A
thread per cell, as Nova's scatter-gather gives each, costs the request
more of the process's CPU than the trivial queries themselves: on a
machine whose cores the cloud's other services share, that is time the
request waits for a core. A group's cells are asked in turn, so one cell
that hangs leaves the cells after it in its group unasked: like a cell
whose thread did not start in time in Nova's scatter-gather, a cell that
gave no answer within the timeout counts as down.
"""

import threading
import weakref

import futurist
from futurist import waiters
from nova import context as nova_context
from oslo_log import log as logging

from nova_ext.index.apply import cell_probe
from nova_ext import per_process
from nova_ext.seams.internals import cells as nova_cells

LOG = logging.getLogger(__name__)
#: Threads asking cells at once in a process; more groups wait for one.
CHECKS_AT_ONCE = 8
#: Cells one thread asks in turn, within one check.
CELLS_PER_THREAD = 4

_POOLS = per_process.Registry()


def _pool():
    """This process's pool for the checks, made on first use."""
    return _POOLS.get(None, lambda: futurist.ThreadPoolExecutor(
        max_workers=CHECKS_AT_ONCE))


def shutdown():
    """Stop the pool's threads once their checks are done (tests)."""
    for pool in _POOLS.clear():
        pool.shutdown(wait=True)


class _Probes(object):
    """One check's questions to every cell, under way on the pool.

    :param ask: ``ask(ctx, cell)``: None if the cell answered, else why
        not.
    """

    def __init__(self, ctx, cells, ask):
        self.cells = [cell.uuid for cell in cells]
        # {cell uuid: None, or why it did not answer}, as the answers come.
        self.answers = {}
        groups = [cells[n:n + CELLS_PER_THREAD]
                  for n in range(0, len(cells), CELLS_PER_THREAD)]
        self._futures = [_pool().submit(self._ask_all, ctx, group, ask)
                         for group in groups]

    def _ask_all(self, ctx, cells, ask):
        # The pool's thread logs with the request's id, as the request
        # would.
        ctx.update_store()
        for cell in cells:
            self.answers[cell.uuid] = ask(ctx, cell)

    def down(self, timeout):
        """The cells that gave no answer, waiting ``timeout`` s at most."""
        waiters.wait_for_all(self._futures, timeout)
        for future in self._futures:
            # A group that has not begun does not begin late.
            future.cancel()
        answers = dict(self.answers)
        return sorted(uuid for uuid in self.cells
                      if uuid not in answers or answers[uuid] is not None)


class _Raising(object):
    """A check that could not begin: why, raised when asked."""

    def __init__(self, error):
        self.error = error

    def down(self, timeout):
        raise self.error


class CellHealth(object):

    def __init__(self):
        self._lock = threading.Lock()
        self._down = []
        #: Checks made (each a query to every cell).
        self.checks = 0
        #: {request context: its check begun early (a _Probes)}.
        self._begun = weakref.WeakKeyDictionary()

    def begin(self, ctx, conf):
        """Begin ``ctx``'s check now, on threads of this process's pool.

        For a request that reads something else first whose order with
        the check does not matter (the build requests): the check then
        costs it no time of its own. :meth:`down_cells` of the same
        context gives its answer.
        """
        try:
            probes = self._start(ctx)
        except Exception as e:
            # Raised where the answer is asked for, as a check made then
            # would raise it, within the list's own handling of errors;
            # without its traceback, whose frames hold the context, which
            # would then never leave the checks begun.
            probes = _Raising(e.with_traceback(None))
        with self._lock:
            self._begun[ctx] = probes

    def _start(self, ctx):
        return _Probes(ctx, self._cells(), self._ask)

    def _cells(self):
        return nova_cells.all_cells()

    def begun(self, ctx):
        """Whether a check of ``ctx``'s was begun and not yet given."""
        with self._lock:
            return ctx in self._begun

    def _ask(self, ctx, cell):
        """None if ``cell`` answers, else why not (text).

        Not the exception: its traceback would hold the request's context
        for as long as an unclaimed check is kept.
        """
        try:
            # Nova's DownCellFixture, which tests use to take cells down,
            # makes target_cell raise for them.
            with nova_context.target_cell(ctx, cell) as cctxt:
                self._probe(cctxt, cell)
        except Exception as e:
            LOG.debug('nova_ext index: cell %s does not answer (%s: %s)',
                      cell.uuid, type(e).__name__, e)
            return '%s: %s' % (type(e).__name__, e)
        return None

    def _probe(self, cctxt, cell):
        # The database Nova's list query of the cell reads
        # (``reader.allow_async``: the replica [database]slave_connection
        # names, if any), asked on a connection of the check's own.
        cell_probe.ask(cctxt, cell)

    def down_cells(self, ctx, conf):
        """Uuids of the cells that do not answer now.

        The answer of the check :meth:`begin` began for ``ctx``, if any:
        given once, a second call checks again.
        """
        with self._lock:
            probes = self._begun.pop(ctx, None)
        if probes is None:
            probes = self._start(ctx)
        down = probes.down(conf.nova_ext_index.query_timeout)
        with self._lock:
            self.checks += 1
            if down != self._down:
                LOG.info('nova_ext index: cells down: %s', down or 'none')
                self._down = down
        return down
