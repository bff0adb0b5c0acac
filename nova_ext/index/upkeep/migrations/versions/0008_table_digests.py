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

The book's ``digest`` holds one digest per mirrored table, end to end, so
that a read that finds an instance changed writes only the tables whose
rows changed (a rename rewrites the instance row, not its system
metadata, flavor or network info). The column is widened to hold them.
A digest written before is not of that layout: the instance's next write
writes every table, as before.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-27
"""

import sqlalchemy as sa

from nova_ext.index.upkeep.migrations import ddl

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade():
    ddl.widen('nova_ext_index_instances', 'digest', sa.String(64), sa.Text())
