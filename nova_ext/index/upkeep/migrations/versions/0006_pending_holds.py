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
"""Marks held by Nova transactions that have not committed yet.

Change capture marks an instance before the Nova transaction that changes
it commits (a hold) and again once it has (a release); a mark is not
removed while it has more holds than releases, so that no list can read
the index between Nova's commit and the mark that reports it. Existing
marks have neither.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

from nova_ext.index.upkeep.migrations import ddl

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None

EPOCH = sa.Float().with_variant(mysql.DOUBLE(), 'mysql')


def upgrade():
    for column in (sa.Column('holds', sa.Integer(), nullable=False,
                             server_default='0'),
                   sa.Column('releases', sa.Integer(), nullable=False,
                             server_default='0'),
                   sa.Column('held_at', EPOCH, nullable=False,
                             server_default='0')):
        ddl.add_column('nova_ext_index_pending', column)
