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
"""``nova.context``: Nova's cells, their caches, and its scatter-gather.

Nova keeps two module attributes per process: ``CELLS``, the cell mappings
``load_cells`` reads once, and ``CELL_CACHE``, where ``set_target_cell``
(and so ``target_cell``) finds a cell's database connection by the cell's
uuid before it makes one. The instance index is presented to Nova's list
code as one more cell: its own engine is put in ``CELL_CACHE``.

nova_ext asks several cells at once as Nova's list does, with
``scatter_gather_cells``, Nova's timeout (``CELL_TIMEOUT``) and its marks
of a cell that gave no answer (``did_not_respond_sentinel``, or the
exception it raised): :func:`scatter` and :func:`failure`.

The contract test is
``nova_ext.tests.unit.seams.test_internals_cells``.
"""


from nova import context as nova_context

from nova_ext.seams import internals

POINT = "nova.context's cell caches (CELLS, CELL_CACHE)"


def _check():
    internals.check(POINT)


def all_cells():
    """Every cell mapping, cell0 included, as Nova's list code reads them.

    ``nova.context.CELLS``, loaded first if this process has not yet.

    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    _check()
    nova_context.load_cells()
    return list(nova_context.CELLS)


def cache_database(cell_uuid, context_manager):
    """Have ``target_cell`` give the cell ``cell_uuid`` this database.

    :param context_manager: an oslo.db enginefacade transaction context,
        as Nova's ``nova.db.main.api.create_context_manager`` makes.
    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    _check()
    # (database, message queue): a cell Nova's list code only reads needs
    # no message queue.
    nova_context.CELL_CACHE[cell_uuid] = (context_manager, None)


def scatter(ctx, cells, fn, *args, timeout=None):
    """``fn(cell context, *args)`` in each of ``cells``, in parallel.

    As Nova's list reads its cells (``nova.context.scatter_gather_cells``).

    :param cells: cell mappings.
    :param timeout: seconds each cell has to answer; by default Nova's
        own, ``nova.context.CELL_TIMEOUT``.
    :returns: ``{cell uuid: result}``; :func:`failure` tells a result that
        is no answer.
    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    _check()
    if timeout is None:
        timeout = nova_context.CELL_TIMEOUT
    return nova_context.scatter_gather_cells(ctx, cells, timeout, fn, *args)


def failure(result):
    """Why a cell's result of :func:`scatter` is no answer, else None.

    :returns: ``'timed out'`` for a cell that did not answer in time, the
        exception for one whose call raised (or returned) one, else None.
    """
    _check()
    if result is nova_context.did_not_respond_sentinel:
        return 'timed out'
    if nova_context.is_cell_failure_sentinel(result):
        return result
    return None
