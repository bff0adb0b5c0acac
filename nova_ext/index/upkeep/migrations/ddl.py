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
"""Schema changes that a rerun of their revision finds already made.

MySQL and MariaDB commit each DDL statement as it runs: a revision that
fails halfway leaves what it made so far, while ``alembic_version`` still
names the revision before it. Each revision makes its tables, indexes and
columns through these, so running ``db_sync`` again completes it.
"""

from alembic import op
import sqlalchemy as sa


def _inspector():
    # A new one each time: an inspector caches what it has read.
    return sa.inspect(op.get_bind())


def create_table(name, *columns, **kwargs):
    if not _inspector().has_table(name):
        op.create_table(name, *columns, **kwargs)


def create_index(name, table, columns, **kwargs):
    if name not in {i['name'] for i in _inspector().get_indexes(table)}:
        op.create_index(name, table, columns, **kwargs)


def add_column(table, column):
    if column.name not in {c['name'] for c in
                           _inspector().get_columns(table)}:
        op.add_column(table, column)


def widen(table, name, old_type, new_type):
    """Give column ``name`` a wider type; nothing on SQLite.

    SQLite holds any text in any text column whatever its declared length,
    and cannot alter a column's type without copying its table.
    """
    bind = op.get_bind()
    if bind.dialect.name == 'sqlite':
        return
    column = {c['name']: c for c in _inspector().get_columns(table)}[name]
    if isinstance(column['type'], type(new_type)):
        return
    op.alter_column(table, name, type_=new_type, existing_type=old_type,
                    existing_nullable=column['nullable'])


def drop_column(table, name):
    if name in {c['name'] for c in _inspector().get_columns(table)}:
        op.drop_column(table, name)
