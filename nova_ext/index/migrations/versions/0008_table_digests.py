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
"""A digest of each table's rows the index holds of each instance.

A read that finds an instance changed writes only the tables whose rows
changed (a rename rewrites the instance row, not its system metadata,
flavor or network info). Existing rows have no table digests until they
are next written, which then writes every table, as before.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-27
"""

import sqlalchemy as sa

from nova_ext.index.migrations import ddl

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade():
    ddl.add_column('nova_ext_index_instances',
                   sa.Column('table_digests', sa.Text(), nullable=True))
