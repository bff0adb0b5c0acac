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
"""Each holder's vouches: its heartbeats that found everything recorded.

``beats`` counts a holder's heartbeats while it lives; ``vouches`` only
those it made once it had recorded every change it learned of
(``nova_ext.index.marks.holders``). A holder that cannot record keeps
beating, so that it is not taken for dead, and stops vouching, so that
nova-api lists from the index only without it
(``nova_ext.index.marks.witness``).

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02
"""

import sqlalchemy as sa

from nova_ext.index.upkeep.migrations import ddl

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade():
    ddl.add_column('nova_ext_index_holders',
                   sa.Column('vouches', sa.BigInteger(), nullable=False,
                             server_default='0'))
