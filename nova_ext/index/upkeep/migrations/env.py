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
"""Alembic environment of the instance index database.

Run through :func:`nova_ext.index.upkeep.migration.db_sync`, which hands
over the connection; there is no alembic.ini to keep in step with
nova.conf.
"""

from alembic import context


def run_migrations_online():
    connection = context.config.attributes['connection']
    # A revision's version stamp is committed with it, so a later
    # revision's failure leaves the earlier ones applied (see
    # nova_ext.index.upkeep.migrations.ddl for the DDL MySQL commits anyway).
    context.configure(connection=connection, target_metadata=None,
                      render_as_batch=True, transaction_per_migration=True)
    with context.begin_transaction():
        context.run_migrations()


run_migrations_online()
