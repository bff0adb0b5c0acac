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
"""The index's first schema: Nova 34's instance tables, and bookkeeping.

The mirrored tables have the columns, types and indexes of Nova 34's cell
database models (``nova.db.main.models``), so that Nova's own query code runs
against the index unchanged. They have no foreign keys and none of the
unique constraints that only hold within one cell (PCI addresses, security
group names), because the index holds every cell's rows side by side.

Instance ids are per cell, so ``instances.id`` (and ``deleted``, which Nova
sets to the id) is the 64-bit ``cell-local id << 16 | cell mapping id``: see
:mod:`nova_ext.index.ids`.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from nova.db import types as nova_types
from oslo_db.sqlalchemy import types as oslo_types
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

from nova_ext.index.upkeep.migrations import ddl

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None

# Microseconds matter: changes-since and updated_at sorts compare them, and
# MySQL's DATETIME drops them unless asked.
DATETIME = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')
# Epoch seconds. MySQL's FLOAT is single precision: a time.time() in it is
# off by up to a minute, which breaks the index's lag (nova-api would call
# a fresh index stale) and the writer's which-read-is-newer test.
EPOCH = sa.Float().with_variant(mysql.DOUBLE(), 'mysql')
# As Nova's own tables: MySQL's server default may be latin1, which cannot
# hold the names Nova's utf8 tables hold, and its collation is what name
# filters and sorts compare with; InnoDB for transactions.
_TABLE_OPTIONS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8'}


def upgrade():
    ddl.create_table(
        'instance_extra',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('instance_uuid', sa.String(length=36), nullable=False),
        sa.Column('device_metadata', sa.Text(), nullable=True),
        sa.Column('numa_topology', sa.Text(), nullable=True),
        sa.Column('pci_requests', sa.Text(), nullable=True),
        sa.Column('flavor', sa.Text(), nullable=True),
        sa.Column('vcpu_model', sa.Text(), nullable=True),
        sa.Column('migration_context', sa.Text(), nullable=True),
        sa.Column('keypairs', sa.Text(), nullable=True),
        sa.Column('trusted_certs', sa.Text(), nullable=True),
        sa.Column('resources', sa.Text(), nullable=True),
        sa.Column('created_at', DATETIME, nullable=True),
        sa.Column('updated_at', DATETIME, nullable=True),
        sa.Column('deleted_at', DATETIME, nullable=True),
        sa.Column('deleted', oslo_types.SoftDeleteInteger(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        **_TABLE_OPTIONS
    )
    ddl.create_index(
        'instance_extra_idx', 'instance_extra', ['instance_uuid'],
        unique=False)
    ddl.create_table(
        'instance_faults',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('instance_uuid', sa.String(length=36), nullable=True),
        sa.Column('code', sa.Integer(), nullable=False),
        sa.Column('message', sa.String(length=255), nullable=True),
        sa.Column('details',
                  sa.Text().with_variant(mysql.MEDIUMTEXT(), 'mysql'),
                  nullable=True),
        sa.Column('host', sa.String(length=255), nullable=True),
        sa.Column('created_at', DATETIME, nullable=True),
        sa.Column('updated_at', DATETIME, nullable=True),
        sa.Column('deleted_at', DATETIME, nullable=True),
        sa.Column('deleted', oslo_types.SoftDeleteInteger(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        **_TABLE_OPTIONS
    )
    ddl.create_index(
        'instance_faults_host_idx', 'instance_faults', ['host'], unique=False)
    ddl.create_index(
        'instance_faults_instance_uuid_deleted_created_at_idx',
        'instance_faults', ['instance_uuid', 'deleted', 'created_at'],
        unique=False)
    ddl.create_table(
        'instance_info_caches',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('network_info',
                  sa.Text().with_variant(mysql.MEDIUMTEXT(), 'mysql'),
                  nullable=True),
        sa.Column('instance_uuid', sa.String(length=36), nullable=False),
        sa.Column('created_at', DATETIME, nullable=True),
        sa.Column('updated_at', DATETIME, nullable=True),
        sa.Column('deleted_at', DATETIME, nullable=True),
        sa.Column('deleted', oslo_types.SoftDeleteInteger(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('instance_uuid',
                            name='uniq_instance_info_caches0instance_uuid'),
        **_TABLE_OPTIONS
    )
    ddl.create_table(
        'instance_metadata',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('key', sa.String(length=255), nullable=True),
        sa.Column('value', sa.String(length=255), nullable=True),
        sa.Column('instance_uuid', sa.String(length=36), nullable=True),
        sa.Column('created_at', DATETIME, nullable=True),
        sa.Column('updated_at', DATETIME, nullable=True),
        sa.Column('deleted_at', DATETIME, nullable=True),
        sa.Column('deleted', oslo_types.SoftDeleteInteger(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        **_TABLE_OPTIONS
    )
    ddl.create_index(
        'instance_metadata_instance_uuid_idx', 'instance_metadata',
        ['instance_uuid'], unique=False)
    ddl.create_table(
        'instance_system_metadata',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('key', sa.String(length=255), nullable=False),
        sa.Column('value', sa.String(length=255), nullable=True),
        sa.Column('instance_uuid', sa.String(length=36), nullable=False),
        sa.Column('created_at', DATETIME, nullable=True),
        sa.Column('updated_at', DATETIME, nullable=True),
        sa.Column('deleted_at', DATETIME, nullable=True),
        sa.Column('deleted', oslo_types.SoftDeleteInteger(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        **_TABLE_OPTIONS
    )
    ddl.create_index(
        'instance_uuid', 'instance_system_metadata', ['instance_uuid'],
        unique=False)
    ddl.create_table(
        'instances',
        sa.Column('id', sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column('user_id', sa.String(length=255), nullable=True),
        sa.Column('project_id', sa.String(length=255), nullable=True),
        sa.Column('image_ref', sa.String(length=255), nullable=True),
        sa.Column('kernel_id', sa.String(length=255), nullable=True),
        sa.Column('ramdisk_id', sa.String(length=255), nullable=True),
        sa.Column('hostname', sa.String(length=255), nullable=True),
        sa.Column('launch_index', sa.Integer(), nullable=True),
        sa.Column('key_name', sa.String(length=255), nullable=True),
        sa.Column('key_data',
                  sa.Text().with_variant(mysql.MEDIUMTEXT(), 'mysql'),
                  nullable=True),
        sa.Column('power_state', sa.Integer(), nullable=True),
        sa.Column('vm_state', sa.String(length=255), nullable=True),
        sa.Column('task_state', sa.String(length=255), nullable=True),
        sa.Column('memory_mb', sa.Integer(), nullable=True),
        sa.Column('vcpus', sa.Integer(), nullable=True),
        sa.Column('root_gb', sa.Integer(), nullable=True),
        sa.Column('ephemeral_gb', sa.Integer(), nullable=True),
        sa.Column('ephemeral_key_uuid', sa.String(length=36), nullable=True),
        sa.Column('host', sa.String(length=255), nullable=True),
        sa.Column('node', sa.String(length=255), nullable=True),
        sa.Column('compute_id', sa.BigInteger(), nullable=True),
        sa.Column('instance_type_id', sa.Integer(), nullable=True),
        sa.Column('user_data',
                  sa.Text().with_variant(mysql.MEDIUMTEXT(), 'mysql'),
                  nullable=True),
        sa.Column('reservation_id', sa.String(length=255), nullable=True),
        sa.Column('launched_at', DATETIME, nullable=True),
        sa.Column('terminated_at', DATETIME, nullable=True),
        sa.Column('availability_zone', sa.String(length=255), nullable=True),
        sa.Column('display_name', sa.String(length=255), nullable=True),
        sa.Column('display_description', sa.String(length=255), nullable=True),
        sa.Column('launched_on',
                  sa.Text().with_variant(mysql.MEDIUMTEXT(), 'mysql'),
                  nullable=True),
        sa.Column('locked', sa.Boolean(), nullable=True),
        sa.Column('locked_by',
                  sa.Enum('owner', 'admin', name='instances0locked_by'),
                  nullable=True),
        sa.Column('os_type', sa.String(length=255), nullable=True),
        sa.Column('architecture', sa.String(length=255), nullable=True),
        sa.Column('vm_mode', sa.String(length=255), nullable=True),
        sa.Column('uuid', sa.String(length=36), nullable=False),
        sa.Column('root_device_name', sa.String(length=255), nullable=True),
        sa.Column('default_ephemeral_device',
                  sa.String(length=255), nullable=True),
        sa.Column('default_swap_device', sa.String(length=255), nullable=True),
        sa.Column('config_drive', sa.String(length=255), nullable=True),
        sa.Column('access_ip_v4', nova_types.IPAddress(), nullable=True),
        sa.Column('access_ip_v6', nova_types.IPAddress(), nullable=True),
        sa.Column('auto_disk_config', sa.Boolean(), nullable=True),
        sa.Column('progress', sa.Integer(), nullable=True),
        sa.Column('shutdown_terminate', sa.Boolean(), nullable=True),
        sa.Column('disable_terminate', sa.Boolean(), nullable=True),
        sa.Column('cell_name', sa.String(length=255), nullable=True),
        sa.Column('cleaned', sa.Integer(), nullable=True),
        sa.Column('hidden', sa.Boolean(), nullable=True),
        sa.Column('created_at', DATETIME, nullable=True),
        sa.Column('updated_at', DATETIME, nullable=True),
        sa.Column('deleted_at', DATETIME, nullable=True),
        sa.Column('deleted', sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('uuid', name='uniq_instances0uuid'),
        **_TABLE_OPTIONS
    )
    ddl.create_index(
        'instances_compute_id_deleted_idx', 'instances',
        ['compute_id', 'deleted'], unique=False)
    ddl.create_index(
        'instances_deleted_created_at_idx', 'instances',
        ['deleted', 'created_at'], unique=False)
    ddl.create_index(
        'instances_host_deleted_cleaned_idx', 'instances',
        ['host', 'deleted', 'cleaned'], unique=False)
    ddl.create_index(
        'instances_host_node_deleted_idx', 'instances',
        ['host', 'node', 'deleted'], unique=False)
    ddl.create_index(
        'instances_project_id_deleted_idx', 'instances',
        ['project_id', 'deleted'], unique=False)
    ddl.create_index(
        'instances_project_id_idx', 'instances', ['project_id'], unique=False)
    ddl.create_index(
        'instances_reservation_id_idx', 'instances', ['reservation_id'],
        unique=False)
    ddl.create_index(
        'instances_task_state_updated_at_idx', 'instances',
        ['task_state', 'updated_at'], unique=False)
    ddl.create_index(
        'instances_terminated_at_launched_at_idx', 'instances',
        ['terminated_at', 'launched_at'], unique=False)
    ddl.create_index(
        'instances_updated_at_project_id_idx', 'instances',
        ['updated_at', 'project_id'], unique=False)
    ddl.create_index(
        'instances_uuid_deleted_idx', 'instances', ['uuid', 'deleted'],
        unique=False)
    ddl.create_table(
        'pci_devices',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('uuid', sa.String(length=36), nullable=True),
        sa.Column('compute_node_id', sa.Integer(), nullable=False),
        sa.Column('address', sa.String(length=12), nullable=False),
        sa.Column('vendor_id', sa.String(length=4), nullable=False),
        sa.Column('product_id', sa.String(length=4), nullable=False),
        sa.Column('dev_type', sa.String(length=8), nullable=False),
        sa.Column('dev_id', sa.String(length=255), nullable=True),
        sa.Column('label', sa.String(length=255), nullable=False),
        sa.Column('status', sa.String(length=36), nullable=False),
        sa.Column('request_id', sa.String(length=36), nullable=True),
        sa.Column('extra_info', sa.Text(), nullable=True),
        sa.Column('instance_uuid', sa.String(length=36), nullable=True),
        sa.Column('numa_node', sa.Integer(), nullable=True),
        sa.Column('parent_addr', sa.String(length=12), nullable=True),
        sa.Column('created_at', DATETIME, nullable=True),
        sa.Column('updated_at', DATETIME, nullable=True),
        sa.Column('deleted_at', DATETIME, nullable=True),
        sa.Column('deleted', oslo_types.SoftDeleteInteger(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        **_TABLE_OPTIONS
    )
    ddl.create_index(
        'ix_pci_devices_compute_node_id_deleted', 'pci_devices',
        ['compute_node_id', 'deleted'], unique=False)
    ddl.create_index(
        'ix_pci_devices_compute_node_id_parent_addr_deleted', 'pci_devices',
        ['compute_node_id', 'parent_addr', 'deleted'], unique=False)
    ddl.create_index(
        'ix_pci_devices_instance_uuid_deleted', 'pci_devices',
        ['instance_uuid', 'deleted'], unique=False)
    ddl.create_table(
        'security_group_instance_association',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('security_group_id', sa.Integer(), nullable=True),
        sa.Column('instance_uuid', sa.String(length=36), nullable=True),
        sa.Column('created_at', DATETIME, nullable=True),
        sa.Column('updated_at', DATETIME, nullable=True),
        sa.Column('deleted_at', DATETIME, nullable=True),
        sa.Column('deleted', oslo_types.SoftDeleteInteger(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        **_TABLE_OPTIONS
    )
    ddl.create_index(
        'security_group_instance_association_instance_uuid_idx',
        'security_group_instance_association', ['instance_uuid'],
        unique=False)
    # Only joined by Nova's security group query; SecurityGroup objects
    # have no rules, so it stays empty.
    ddl.create_table(
        'security_group_rules',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('parent_group_id', sa.Integer(), nullable=True),
        sa.Column('protocol', sa.String(length=255), nullable=True),
        sa.Column('from_port', sa.Integer(), nullable=True),
        sa.Column('to_port', sa.Integer(), nullable=True),
        sa.Column('cidr', nova_types.CIDR(), nullable=True),
        sa.Column('group_id', sa.Integer(), nullable=True),
        sa.Column('created_at', DATETIME, nullable=True),
        sa.Column('updated_at', DATETIME, nullable=True),
        sa.Column('deleted_at', DATETIME, nullable=True),
        sa.Column('deleted', oslo_types.SoftDeleteInteger(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        **_TABLE_OPTIONS
    )
    ddl.create_table(
        'security_groups',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('name', sa.String(length=255), nullable=True),
        sa.Column('description', sa.String(length=255), nullable=True),
        sa.Column('user_id', sa.String(length=255), nullable=True),
        sa.Column('project_id', sa.String(length=255), nullable=True),
        sa.Column('created_at', DATETIME, nullable=True),
        sa.Column('updated_at', DATETIME, nullable=True),
        sa.Column('deleted_at', DATETIME, nullable=True),
        sa.Column('deleted', oslo_types.SoftDeleteInteger(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        **_TABLE_OPTIONS
    )
    ddl.create_table(
        'tags',
        sa.Column('resource_id', sa.String(length=36), nullable=False),
        sa.Column('tag', sa.Unicode(length=80), nullable=False),
        sa.PrimaryKeyConstraint('resource_id', 'tag'),
        **_TABLE_OPTIONS
    )
    ddl.create_index('tags_tag_idx', 'tags', ['tag'], unique=False)
    _bookkeeping()


def _bookkeeping():
    # One row per indexed instance: where it lives and which version of it
    # the index holds, so that older reads never overwrite newer ones.
    ddl.create_table(
        'nova_ext_index_instances',
        sa.Column('uuid', sa.String(36), primary_key=True),
        sa.Column('cell_uuid', sa.String(36), nullable=False),
        sa.Column('source_id', sa.Integer(), nullable=False),
        sa.Column('source_updated_at', DATETIME, nullable=True),
        sa.Column('read_at', EPOCH, nullable=False),
        sa.Column('deleted_at', DATETIME, nullable=True),
        **_TABLE_OPTIONS
    )
    ddl.create_index('nova_ext_index_instances_cell_idx',
                     'nova_ext_index_instances', ['cell_uuid', 'source_id'])
    ddl.create_index('nova_ext_index_instances_deleted_at_idx',
                     'nova_ext_index_instances', ['deleted_at'])
    # Instances a notification said changed, not applied yet. A row is
    # written before the notification is acknowledged and removed only
    # after the change is in the index; its age is the index's lag.
    ddl.create_table(
        'nova_ext_index_pending',
        sa.Column('uuid', sa.String(36), primary_key=True),
        sa.Column('first_event_at', EPOCH, nullable=False),
        sa.Column('last_event_at', EPOCH, nullable=False),
        sa.Column('attempts', sa.Integer(), nullable=False, default=0),
        **_TABLE_OPTIONS
    )
    ddl.create_index('nova_ext_index_pending_first_idx',
                     'nova_ext_index_pending', ['first_event_at'])
    # List counters of each nova-api process (served, handed to Nova, ...),
    # written every few seconds, read by nova-ext-manage index status.
    ddl.create_table(
        'nova_ext_index_metrics',
        sa.Column('host', sa.String(255), primary_key=True),
        sa.Column('pid', sa.Integer(), primary_key=True),
        sa.Column('driver', sa.String(36), nullable=False),
        sa.Column('started_at', EPOCH, nullable=False),
        sa.Column('updated_at', EPOCH, nullable=False),
        sa.Column('counts', sa.Text(), nullable=False),
        **_TABLE_OPTIONS
    )
    # Per-cell cursor of ``nova-ext-manage index sync``, so an interrupted
    # sync resumes where it stopped.
    ddl.create_table(
        'nova_ext_index_sync',
        sa.Column('cell_uuid', sa.String(36), primary_key=True),
        sa.Column('last_source_id', sa.Integer(), nullable=False),
        sa.Column('started_at', EPOCH, nullable=False),
        sa.Column('finished_at', EPOCH, nullable=True),
        **_TABLE_OPTIONS
    )
