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
"""Nova 34's block device mappings, for the volumes a server list shows.

As in 0001: Nova's columns, types and indexes, no foreign keys, and not the
unique ``uuid`` constraint, which only holds within one cell.

An index made before this revision holds no block device mappings. So that
no page is served without its volumes, every indexed instance is marked
pending as of the epoch: the index reports itself behind by that much
(nova-api lists through Nova meanwhile) until the indexer has read every
instance again, block device mappings included.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""

from alembic import op
from oslo_db.sqlalchemy import types as oslo_types
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

from nova_ext.index.upkeep.migrations import ddl

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None

DATETIME = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')
_TABLE_OPTIONS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8'}


def _string(length=255):
    return sa.String(length=length)


def upgrade():
    ddl.create_table(
        'block_device_mapping',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('instance_uuid', _string(36), nullable=True),
        sa.Column('uuid', _string(36), nullable=True),
        sa.Column('source_type', _string(), nullable=True),
        sa.Column('destination_type', _string(), nullable=True),
        sa.Column('guest_format', _string(), nullable=True),
        sa.Column('device_type', _string(), nullable=True),
        sa.Column('disk_bus', _string(), nullable=True),
        sa.Column('boot_index', sa.Integer(), nullable=True),
        sa.Column('device_name', _string(), nullable=True),
        sa.Column('delete_on_termination', sa.Boolean(), nullable=True),
        sa.Column('snapshot_id', _string(36), nullable=True),
        sa.Column('volume_id', _string(36), nullable=True),
        sa.Column('volume_size', sa.Integer(), nullable=True),
        sa.Column('volume_type', _string(), nullable=True),
        sa.Column('image_id', _string(36), nullable=True),
        sa.Column('no_device', sa.Boolean(), nullable=True),
        sa.Column('connection_info',
                  sa.Text().with_variant(mysql.MEDIUMTEXT(), 'mysql'),
                  nullable=True),
        sa.Column('tag', _string(), nullable=True),
        sa.Column('attachment_id', _string(36), nullable=True),
        sa.Column('encrypted', sa.Boolean(), nullable=True),
        sa.Column('encryption_secret_uuid', _string(36), nullable=True),
        sa.Column('encryption_format', _string(128), nullable=True),
        sa.Column('encryption_options', _string(4096), nullable=True),
        sa.Column('created_at', DATETIME, nullable=True),
        sa.Column('updated_at', DATETIME, nullable=True),
        sa.Column('deleted_at', DATETIME, nullable=True),
        sa.Column('deleted', oslo_types.SoftDeleteInteger(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        **_TABLE_OPTIONS
    )
    for name, columns in (
            ('snapshot_id', ['snapshot_id']),
            ('volume_id', ['volume_id']),
            ('block_device_mapping_instance_uuid_idx', ['instance_uuid']),
            ('block_device_mapping_instance_uuid_volume_id_idx',
             ['instance_uuid', 'volume_id']),
            ('block_device_mapping_instance_uuid_device_name_idx',
             ['instance_uuid', 'device_name'])):
        ddl.create_index(name, 'block_device_mapping', columns, unique=False)
    # Every instance indexed so far is read again (see the docstring),
    # those already marked too, as of the epoch.
    op.execute('UPDATE nova_ext_index_pending SET first_event_at = 0')
    op.execute(
        'INSERT INTO nova_ext_index_pending '
        '(uuid, first_event_at, last_event_at, attempts) '
        'SELECT i.uuid, 0, 0, 0 FROM nova_ext_index_instances i '
        'WHERE NOT EXISTS (SELECT 1 FROM nova_ext_index_pending p '
        'WHERE p.uuid = i.uuid)')
