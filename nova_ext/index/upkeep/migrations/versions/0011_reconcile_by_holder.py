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
"""The reconcile lease held by a holder, timed by no shared clock.

The lease's ``holder`` becomes a row of ``nova_ext_index_holders``: it is
free once that holder is gone, as the holders' heartbeats tell, instead of
at an expiry time compared across hosts. ``generation`` counts the passes
given back, so that a decision to take the lease made before one was given
back cannot take it after. ``timer`` names the holder that gave back the
last complete pass and times the next one by its own clock (NULL: a pass
is due at once).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-28
"""

import sqlalchemy as sa

from nova_ext.index.upkeep.migrations import ddl

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade():
    table = 'nova_ext_index_reconcile'
    ddl.add_column(table, sa.Column('generation', sa.BigInteger(),
                                    nullable=False, server_default='0'))
    ddl.add_column(table, sa.Column('timer', sa.String(36), nullable=True))
    # A holder named the old way (host:pid) is no holder's row: the pass
    # it ran, if any, is taken over as a dead one's.
    for name in ('expires_at', 'due_at'):
        ddl.drop_column(table, name)
