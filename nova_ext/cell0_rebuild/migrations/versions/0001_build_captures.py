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
"""What a rebuild from cell0 needs and Nova does not keep.

Revision ID: 0001
Revises:
Create Date: 2026-11-23
"""

from alembic import op
import sqlalchemy as sa

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'nova_ext_build_captures',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('reservation_id', sa.String(255), nullable=True),
        sa.Column('requested_networks', sa.Text, nullable=True),
        sa.Column('personality', sa.Boolean, nullable=False),
        sa.Column('created_at', sa.DateTime, nullable=False),
        sa.UniqueConstraint('instance_uuid',
                            name='uniq_nova_ext_build_captures0uuid'),
        mysql_engine='InnoDB', mysql_charset='utf8',
    )
