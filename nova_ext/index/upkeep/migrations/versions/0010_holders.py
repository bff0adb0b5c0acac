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
"""Which process holds each held mark, and whether it still lives.

Each process that holds marks (change capture) has a row in
``nova_ext_index_holders`` whose ``beats`` it counts up while it lives,
and records each hold as a row of ``nova_ext_index_holds`` (instance,
holder, and the holder's number for the transaction), which its release
deletes. A reader that sees a holder's count stand still for long enough
by its own clock releases that holder's holds: it died with its Nova
transactions in flight, and they are over. The holds that
``nova_ext_index_pending`` counted per mark, of no known process, are
dropped: the next read of each of those marks removes it.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

from nova_ext.index.upkeep.migrations import ddl

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None

EPOCH = sa.Float().with_variant(mysql.DOUBLE(), 'mysql')
_TABLE_OPTIONS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8'}


def upgrade():
    ddl.create_table(
        'nova_ext_index_holders',
        sa.Column('holder', sa.String(36), primary_key=True),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('pid', sa.Integer(), nullable=False),
        sa.Column('beats', sa.BigInteger(), nullable=False),
        # For operators only: when the holder started, by its own clock.
        sa.Column('started_at', EPOCH, nullable=False),
        **_TABLE_OPTIONS)
    ddl.create_table(
        'nova_ext_index_holds',
        sa.Column('uuid', sa.String(36), primary_key=True),
        sa.Column('holder', sa.String(36), primary_key=True),
        sa.Column('token', sa.BigInteger(), primary_key=True,
                  autoincrement=False),
        **_TABLE_OPTIONS)
    ddl.create_index('nova_ext_index_holds_holder_idx',
                     'nova_ext_index_holds', ['holder'])
    for name in ('holds', 'releases', 'held_at'):
        ddl.drop_column('nova_ext_index_pending', name)
