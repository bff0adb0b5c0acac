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
"""A digest of what the index holds of each instance.

Each change of an instance is read from its cell at least twice (while
the Nova transaction holds its mark, and after its release); a read whose
digest is the one the index holds writes nothing but when it was read
(``checked_at``), and ``read_at``, which keys the render cache, stays.
Existing rows have no digest until they are next written.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

from nova_ext.index.upkeep.migrations import ddl

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None

# Kept here, as in every revision: a migration stays as it was written.
EPOCH = sa.Float().with_variant(mysql.DOUBLE(), 'mysql')


def upgrade():
    for column in (sa.Column('digest', sa.String(64), nullable=True),
                   sa.Column('checked_at', EPOCH, nullable=True)):
        ddl.add_column('nova_ext_index_instances', column)
