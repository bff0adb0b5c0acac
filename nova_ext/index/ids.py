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
it), and Nova's default sort, ``created_at desc, id desc``, compares ids. The
index id is therefore ``cell-local id << 16 | cell mapping id``: it orders
like the cell-local id whenever the cell-local ids differ, which is how
Nova's merge of the cells orders them. Only two instances with the same
``created_at`` *and* the same cell-local id in two different cells sort
differently (Nova breaks that tie by uuid, the index by cell); that takes
second-precision timestamps, two cells and equal ids at once.
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
