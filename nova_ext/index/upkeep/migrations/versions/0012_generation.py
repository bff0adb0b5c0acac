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
"""The index's generation: one row that every change to the listed rows moves.

A transaction that writes the copies of Nova's tables or the book counts
``generation`` up and draws a new random ``token`` before it commits, and
writes in ``nova_ext_index_changes`` which instances it wrote
(``nova_ext.index.generation``); nova-api keeps a page it listed under
both, and brings it up to date from the changes
(``[nova_ext_instance_list]page_cache_size``).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-30
"""

import uuid

from alembic import op
import sqlalchemy as sa

from nova_ext.index.upkeep.migrations import ddl

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None

# As Nova's own tables, and every table of the index.
_TABLE_OPTIONS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8'}


def upgrade():
    ddl.create_table(
        'nova_ext_index_generation',
        sa.Column('id', sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column('generation', sa.BigInteger(), nullable=False),
        sa.Column('token', sa.String(36), nullable=False),
        **_TABLE_OPTIONS)
    table = sa.table('nova_ext_index_generation', sa.column('id'),
                     sa.column('generation'), sa.column('token'))
    ddl.create_table(
        'nova_ext_index_changes',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'),
                  primary_key=True, autoincrement=True),
        sa.Column('generation', sa.BigInteger(), nullable=False),
        sa.Column('token', sa.String(36), nullable=False),
        sa.Column('uuid', sa.String(36), nullable=True),
        **_TABLE_OPTIONS)
    ddl.create_index('nova_ext_index_changes_generation_idx',
                     'nova_ext_index_changes', ['generation'])
    changes = sa.table('nova_ext_index_changes', sa.column('generation'),
                       sa.column('token'), sa.column('uuid'))
    bind = op.get_bind()
    if bind.execute(sa.select(table.c.id)).first() is None:
        token = str(uuid.uuid4())
        bind.execute(table.insert().values(id=1, generation=0, token=token))
        # The first generation's changes: none named.
        bind.execute(changes.insert().values(generation=0, token=token,
                                             uuid=None))
