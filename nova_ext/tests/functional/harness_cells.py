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
"""Cells targeted in Nova's harness as the services of a cloud target them.

Nova's ``CellDatabases`` fixture replaces ``nova.context.target_cell``.
Every service of the harness shares one process, so its replacement also
switches a process-wide "current cell", which each untargeted database
access of any thread then reads (``_wrap_get_context_manager``). It
switches under a reader-writer lock, and when another thread has moved
the switch in between three times over (about 3 s of its retries), it
gives up: the ``with target_cell(...)`` raises ``RuntimeError: generator
didn't yield``. No real service has that switch, and two things come of
it here that no cloud shows:

- The index, targeted by nova_ext's reads as if it were a cell, became the
  current cell: a compute's or a conductor's untargeted read then found
  the index's tables (``no such table: project_user_quotas`` in the
  conductor's quota recheck).
- On a busy machine the threads that read cells (Nova's and nova_ext's)
  keep the switch moving, and an API request failed with a 500 that only
  the harness makes.

:class:`CellTargets` targets the index with Nova's own ``target_cell``
(the index's engine is in ``CELL_CACHE``, and nova_ext's reads there use
the targeted context alone), and gives every other target to the harness,
asked again while it gives up, for up to :attr:`CellTargets.PATIENCE` s.

Under native threads the harness also serialises the writers of each
database (``DatabaseWriteLock``, a lock per database URL), and an
untargeted access reads the current cell under the reader lock of the
switch. A writer that reads untargeted within its transaction (Nova's
``service_update``, as a service reports its state) then waits for that
reader lock, which waits behind a thread moving the switch, which waits
for the threads targeted at a cell to leave it, which wait for the
writer's database lock: the whole process stops, its test's timeout and
cleanup too. The current cell is one reference, read whole or not at all,
so :class:`CellTargets` reads it without the lock (:func:`_current`).
"""

import contextlib
import functools
import time

import fixtures
from nova import context as nova_context

from nova_ext.instance_list import index as index_driver

#: What ``contextlib`` raises for a context manager that did not yield,
#: as the harness's does when it gives up.
GAVE_UP = "generator didn't yield"


class CellTargets(fixtures.Fixture):
    """``target_cell`` for the index as in a cloud, patient for cells."""

    #: Seconds a target may wait while the harness gives up on it.
    PATIENCE = 60.0

    def _setUp(self):
        self.harness = nova_context.target_cell
        celldbs = getattr(self.harness, '__self__', None)
        #: Nova's own target_cell, as the harness saved it.
        self.real = getattr(celldbs, '_real_target_cell', None)
        #: Targets the harness gave up on and was asked again for.
        self.retried = 0
        if self.real is not None:
            self.useFixture(fixtures.MonkeyPatch(
                'nova.context.target_cell', self.target_cell))
            self.useFixture(fixtures.MonkeyPatch(
                'nova.db.main.api.get_context_manager',
                functools.partial(_current, celldbs)))

    @contextlib.contextmanager
    def target_cell(self, context, cell_mapping):
        if _is_index(cell_mapping):
            with self.real(context, cell_mapping) as cctxt:
                yield cctxt
            return
        deadline = time.monotonic() + self.PATIENCE
        while True:
            with contextlib.ExitStack() as stack:
                try:
                    cctxt = stack.enter_context(
                        self.harness(context, cell_mapping))
                except RuntimeError as e:
                    if str(e) != GAVE_UP or time.monotonic() > deadline:
                        raise
                    self.retried += 1
                    continue
                yield cctxt
                return


def _is_index(cell_mapping):
    return (cell_mapping is not None and
            cell_mapping.obj_attr_is_set('name') and
            cell_mapping.name == index_driver.CELL_NAME)


def _current(celldbs, context):
    """The harness's ``get_context_manager``, without its reader lock.

    A context targeted at a cell reads that cell's database; another, the
    harness's current cell (``CellDatabases._wrap_get_context_manager``).
    """
    connection = getattr(context, 'db_connection', None)
    if connection:
        return connection
    return celldbs._last_ctxt_mgr
