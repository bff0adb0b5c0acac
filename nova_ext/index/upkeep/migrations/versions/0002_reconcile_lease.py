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
"""The periodic reconcile's lease, and its last pass.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

from nova_ext.index.upkeep.migrations import ddl

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None

# Kept here rather than imported from 0001: a migration must stay as it was
# written whatever later revisions do to their neighbours. MySQL's FLOAT is
# single precision, too coarse for epoch seconds compared across hosts.
EPOCH = sa.Float().with_variant(mysql.DOUBLE(), 'mysql')
_TABLE_OPTIONS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8'}


def upgrade():
    # One row per lease (today only "reconcile"). Every indexer takes it
    # with one conditional UPDATE, so one process runs each pass; a holder
    # that dies stops renewing expires_at and the next one takes over. The
    # last pass is kept beside it for nova-ext-manage index status.
    ddl.create_table(
        'nova_ext_index_reconcile',
        sa.Column('name', sa.String(64), primary_key=True),
        sa.Column('holder', sa.String(255), nullable=True),
        sa.Column('expires_at', EPOCH, nullable=False),
        sa.Column('due_at', EPOCH, nullable=False),
        sa.Column('last_holder', sa.String(255), nullable=True),
        sa.Column('last_started_at', EPOCH, nullable=True),
        sa.Column('last_finished_at', EPOCH, nullable=True),
        sa.Column('last_result', sa.Text(), nullable=True),
        **_TABLE_OPTIONS
    )
