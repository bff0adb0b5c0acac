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
"""``nova.compute.instance_list``: Nova's lister of instances over cells.

The ``index`` driver runs Nova's own ``InstanceLister`` (marker handling,
the ``uuid`` tie-breaker, batching, the merge of sorted cells) over the
index, presented as one cell, and the ``searchlight`` driver finds a
marker as that lister does. Nova's class offers no way to say where the
marker is, and after a run tells a cell that gave no answer only in
``cells_failed`` and ``cells_timed_out``, having dropped the exception:
:class:`InstanceLister` overrides ``get_marker_record`` and
``get_by_filters`` and asks its own :meth:`~InstanceLister.marker_record`,
which a subclass changes.

The contract test is
``nova_ext.tests.unit.seams.test_internals_instance_lister``.
"""


from nova.compute import instance_list as nova_instance_list
from nova.db import utils as db_utils

from nova_ext.seams import internals

POINT = 'nova.compute.instance_list.InstanceLister'


def _check():
    internals.check(POINT)


class InstanceLister(nova_instance_list.InstanceLister):
    """Nova's instance lister over ``cells``, with what a run came to.

    :raises UnsupportedNovaVersion: when made on a Nova nova_ext was not
        tested with.
    """

    def __init__(self, sort_keys, sort_dirs, cells=None, batch_size=None):
        _check()
        super().__init__(sort_keys, sort_dirs, cells=cells,
                         batch_size=batch_size)
        #: The exception of the last cell query that raised one, or None.
        self.error = None

    def marker_record(self, ctx, marker):
        """``(cell uuid, row)`` of the marker; by default, as Nova finds it.

        :raises nova.exception.MarkerNotFound: as Nova would.
        """
        return super().get_marker_record(ctx, marker)

    def get_marker_record(self, ctx, marker):
        return self.marker_record(ctx, marker)

    def get_by_filters(self, ctx, filters, limit, marker, **kwargs):
        try:
            return super().get_by_filters(ctx, filters, limit, marker,
                                          **kwargs)
        except Exception as e:
            self.error = e
            raise

    @property
    def timed_out(self):
        """Whether a cell did not answer within Nova's timeout."""
        return bool(self.cells_timed_out)

    @property
    def failed(self):
        """Whether a cell's query raised (:attr:`error` says what)."""
        return bool(self.cells_failed)


def batch_size(limit, cells):
    """The rows Nova's list asks each of ``cells`` for at a time."""
    _check()
    return nova_instance_list.get_instance_list_cells_batch_size(limit,
                                                                 cells)


def sort_keys(keys, dirs):
    """Every key of the order of a page Nova's lister gives, in order.

    The request's keys, the lister's ``uuid`` tie-breaker, and the
    defaults Nova's query adds (``created_at`` and ``id``): the database
    sorts by all of them. The uuid is unique, so two rows with the same
    value of each are one row.
    """
    _check()
    keys = list(keys or ())
    # Only the keys are read: a direction for each, where not given.
    dirs = list(dirs or ())[:len(keys)]
    dirs += ['asc'] * (len(keys) - len(dirs))
    context = nova_instance_list.InstanceSortContext(keys, dirs)
    keys, _dirs = db_utils.process_sort_params(
        context.sort_keys, context.sort_dirs, default_dir='desc')
    return list(keys)
