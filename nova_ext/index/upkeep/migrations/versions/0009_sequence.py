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
"""The index's own sequence, which orders marks and reads.

A mark takes the next number each time it is recorded or renewed
(``nova_ext_index_pending.seq``); a read takes the highest number
committed before it reads its cell, and the book keeps the ticket of the
read it holds (``nova_ext_index_instances.ticket``). Existing marks have
number 0, and the rows held have no ticket: the next read of each wins.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-28
"""

import sqlalchemy as sa

from nova_ext.index.upkeep.migrations import ddl

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None

NUMBER = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')
# As Nova's own tables, and every table of the index.
_TABLE_OPTIONS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8'}


def upgrade():
    ddl.create_table(
        'nova_ext_index_sequence',
        # SQLite's AUTOINCREMENT: a number is never given twice, even
        # after the highest row is deleted.
        sa.Column('id', NUMBER, primary_key=True, autoincrement=True),
        sqlite_autoincrement=True, **_TABLE_OPTIONS)
    ddl.add_column('nova_ext_index_pending',
                   sa.Column('seq', sa.BigInteger(), nullable=False,
                             server_default='0'))
    ddl.add_column('nova_ext_index_instances',
                   sa.Column('ticket', sa.BigInteger(), nullable=True))
