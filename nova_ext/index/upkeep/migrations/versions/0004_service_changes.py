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
"""A generation per compute host, moved on by its service notifications.

nova-api keeps the services it read for ``host_status`` only while their
host's generation is the one it read them under (see
``nova_ext.instance_list.services``). An index made before this revision
has no row: every host starts at generation 0, which is what a process
that kept nothing expects.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03
"""

import sqlalchemy as sa

from nova_ext.index.upkeep.migrations import ddl

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None

_TABLE_OPTIONS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8'}


def upgrade():
    ddl.create_table(
        'nova_ext_index_service_changes',
        # Nova's services.host is a String(255).
        sa.Column('host', sa.String(255), primary_key=True),
        sa.Column('generation', sa.BigInteger(), nullable=False),
        **_TABLE_OPTIONS
    )
