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
"""Instance ids in the index.

Nova's instance ids are per cell database, so two cells can both have an
instance 42. The index needs one id per instance (Nova's models key rows by
it): ``cell-local id << 16 | cell mapping id``. Nova's lister orders by
the cell-local id only where a request's every sort key is one Nova
ignores, and then orders two instances of two cells with the same
``created_at`` and id by uuid, which this id cannot: the index hands
those lists to Nova (``instance_list.index_checks.cell_local_order``).
"""

SHIFT = 16
MAX_CELL_ID = (1 << SHIFT) - 1


def index_id(source_id, cell_id):
    if not 0 <= cell_id <= MAX_CELL_ID:
        raise ValueError('cell mapping id %r does not fit the instance '
                         'index' % cell_id)
    return (source_id << SHIFT) | cell_id


def source_id(index_id):
    return index_id >> SHIFT


def cell_id(index_id):
    return index_id & MAX_CELL_ID
