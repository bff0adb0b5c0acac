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
"""The notifications whose marks their own process recorded.

The in-process consumer records the id of each notification it marked,
with the number its mark took; ``nova-ext-indexer`` does not mark the
instance of such a notification again (``nova_ext.index.marks.told``).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-03
"""

import sqlalchemy as sa

from nova_ext.index.upkeep.migrations import ddl

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade():
    ddl.create_table(
        'nova_ext_index_told',
        sa.Column('message_id', sa.String(64), primary_key=True),
        sa.Column('seq', sa.BigInteger(), nullable=False),
        mysql_engine='InnoDB', mysql_charset='utf8')
    ddl.create_index('ix_nova_ext_index_told_seq', 'nova_ext_index_told',
                     ['seq'])
