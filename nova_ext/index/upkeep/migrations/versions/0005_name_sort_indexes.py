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
"""Indexes that let a list sorted by name read its page in order.

Nova sorts ``sort_key=display_name`` by name, then ``created_at``, then
``id``, all in one direction. Each cell database sorts only its own
instances for that; the index holds every cell's, and without these it
sorted all of them (all of a project's) for every page, a cost that grew
with the number of cells. With them the database reads the page off the
index in order, forwards or backwards.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24
"""

from nova_ext.index.upkeep.migrations import ddl

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None

#: {index name: columns}; read by the tests.
INDEXES = {
    'nova_ext_instances_deleted_name_idx':
        ['deleted', 'display_name', 'created_at', 'id'],
    'nova_ext_instances_project_deleted_name_idx':
        ['project_id', 'deleted', 'display_name', 'created_at', 'id'],
}


def upgrade():
    for name, columns in INDEXES.items():
        ddl.create_index(name, 'instances', columns, unique=False)
