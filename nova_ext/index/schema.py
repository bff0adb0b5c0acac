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
"""The index's own tables, as its migrations create them.

Beside the copies of Nova's tables (``instances`` and those joined to it,
in Nova's own schema, which Nova's list code reads), the index keeps:

* :data:`INSTANCES`: what it holds of each instance, apart from Nova's
  columns: its cell, the read that wrote it, the digests of its parts;
* :data:`PENDING`, :data:`HOLDS` and :data:`HOLDERS`: the changes recorded
  and not applied yet (marks), the holds Nova's open transactions keep on
  them, and the processes that hold them;
* :data:`SEQUENCE`: the numbers that order marks and reads;
* :data:`TOLD`: the notifications whose marks their own process recorded;
* :data:`GENERATION`: one row that every change to the listed rows moves;
* :data:`SERVICE_CHANGES`: a generation per host whose services changed;
* :data:`SYNC_CURSORS`: how far ``index sync`` went in each cell;
* :data:`RECONCILE_LEASES`: who runs the reconcile pass, and its last;
* :data:`API_COUNTERS`: each nova-api process's list counters.

Light declarations (``sqlalchemy.table``), typed so that SQLite hands
back datetimes and floats, not strings; the migrations
(``nova_ext/index/upkeep/migrations``) are what creates them.
"""

import sqlalchemy as sa

#: Per instance: its cell and id there, the read that wrote it (``ticket``,
#: ``read_at``), the digests of its parts (``writer``).
INSTANCES = sa.table(
    'nova_ext_index_instances',
    sa.column('uuid', sa.String), sa.column('cell_uuid', sa.String),
    sa.column('source_id', sa.Integer),
    sa.column('source_updated_at', sa.DateTime),
    sa.column('read_at', sa.Float), sa.column('deleted_at', sa.DateTime),
    sa.column('digest', sa.String), sa.column('checked_at', sa.Float),
    sa.column('ticket', sa.BigInteger))

PENDING = sa.table(
    'nova_ext_index_pending',
    sa.column('uuid', sa.String), sa.column('first_event_at', sa.Float),
    sa.column('last_event_at', sa.Float), sa.column('attempts', sa.Integer),
    sa.column('seq', sa.BigInteger))

#: One row per hold: ``(uuid, holder, token)``, the holder's own number
#: for the Nova transaction that holds the mark
#: (``nova_ext.index.marks.holders``).
HOLDS = sa.table(
    'nova_ext_index_holds',
    sa.column('uuid', sa.String), sa.column('holder', sa.String),
    sa.column('token', sa.BigInteger))

#: The processes that hold marks, each counting ``beats`` up while it lives,
#: and ``vouches`` while it has recorded every change it learned of.
HOLDERS = sa.table(
    'nova_ext_index_holders',
    sa.column('holder', sa.String), sa.column('host', sa.String),
    sa.column('pid', sa.Integer), sa.column('beats', sa.BigInteger),
    sa.column('vouches', sa.BigInteger), sa.column('started_at', sa.Float))

SERVICE_CHANGES = sa.table(
    'nova_ext_index_service_changes',
    sa.column('host', sa.String), sa.column('generation', sa.BigInteger))

SYNC_CURSORS = sa.table(
    'nova_ext_index_sync',
    sa.column('cell_uuid', sa.String),
    sa.column('last_source_id', sa.Integer),
    sa.column('started_at', sa.Float), sa.column('finished_at', sa.Float))

API_COUNTERS = sa.table(
    'nova_ext_index_metrics',
    sa.column('host', sa.String), sa.column('pid', sa.Integer),
    sa.column('driver', sa.String), sa.column('started_at', sa.Float),
    sa.column('updated_at', sa.Float), sa.column('counts', sa.Text))

RECONCILE_LEASES = sa.table(
    'nova_ext_index_reconcile',
    sa.column('name', sa.String), sa.column('holder', sa.String),
    sa.column('generation', sa.BigInteger), sa.column('timer', sa.String),
    sa.column('last_holder', sa.String),
    sa.column('last_started_at', sa.Float),
    sa.column('last_finished_at', sa.Float),
    sa.column('last_result', sa.Text))

#: One row (``id`` 1): ``generation`` counted up and a new random ``token``
#: by each transaction that changes what a list reads
#: (``nova_ext.index.generation``).
GENERATION = sa.table(
    'nova_ext_index_generation',
    sa.column('id', sa.Integer), sa.column('generation', sa.BigInteger),
    sa.column('token', sa.String))

#: What each move of the generation changed, with the generation's
#: token: a row per instance written, or one with no uuid, "anything"
#: (``nova_ext.index.generation``).
CHANGES = sa.table(
    'nova_ext_index_changes',
    sa.column('generation', sa.BigInteger), sa.column('token', sa.String),
    sa.column('uuid', sa.String))

#: The ids of notifications whose marks the in-process consumer recorded,
#: with the number they took (``nova_ext.index.marks.told``).
TOLD = sa.table(
    'nova_ext_index_told',
    sa.column('message_id', sa.String), sa.column('seq', sa.BigInteger))

#: One row per number taken; all but the highest are pruned
#: (``sequence.prune``)
#: while every backend keeps counting from the highest ever given.
SEQUENCE = sa.Table(
    'nova_ext_index_sequence', sa.MetaData(),
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'),
              primary_key=True, autoincrement=True),
    sqlite_autoincrement=True)
