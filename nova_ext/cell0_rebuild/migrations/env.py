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
"""Alembic environment of nova_ext's tables in Nova's API database.

Run through :func:`nova_ext.cell0_rebuild.migration.db_sync`, which hands
over the connection and the version table.
"""

from alembic import context


def run_migrations_online():
    config = context.config
    context.configure(connection=config.attributes['connection'],
                      target_metadata=None, render_as_batch=True,
                      version_table=config.attributes['version_table'])
    with context.begin_transaction():
        context.run_migrations()


run_migrations_online()
