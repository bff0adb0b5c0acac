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
"""nova_ext's table in Nova's API database.

A metadata of its own, so nothing of nova_ext joins Nova's models, and a
version table of its own (migration.py), so Nova's migrations never see it.
"""

import sqlalchemy as sa
from sqlalchemy import orm

BASE = orm.declarative_base()


class BuildCapture(BASE):
    """What a rebuild from cell0 needs that Nova does not keep."""

    __tablename__ = 'nova_ext_build_captures'
    __table_args__ = ({'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8'},)

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    instance_uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    project_id = sa.Column(sa.String(255), nullable=False)
    reservation_id = sa.Column(sa.String(255), nullable=True)
    # NetworkRequestList.obj_to_primitive() as JSON; NULL when the request
    # named no networks (before microversion 2.37).
    requested_networks = sa.Column(sa.Text, nullable=True)
    personality = sa.Column(sa.Boolean, nullable=False, default=False)
    created_at = sa.Column(sa.DateTime, nullable=False)
