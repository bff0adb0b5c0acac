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
"""Schema migrations of nova_ext's tables in Nova's API database.

Kept apart from Nova's own (a version table of nova_ext's), so that
nova-manage api_db sync and nova-ext-manage api_db sync never see
each other's revisions.
"""

import os

from alembic import command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script

VERSION_TABLE = 'nova_ext_alembic_version'
_SCRIPTS = os.path.join(os.path.dirname(__file__), 'migrations')


def _config(connection):
    cfg = alembic_config.Config()
    cfg.set_main_option('script_location', _SCRIPTS)
    cfg.attributes['connection'] = connection
    cfg.attributes['version_table'] = VERSION_TABLE
    return cfg


def _engine():
    from nova.db.api import api as api_db

    return api_db.get_engine()


def db_sync(revision='head', engine=None):
    """Create or upgrade nova_ext's API database tables to ``revision``."""
    with (engine or _engine()).begin() as connection:
        command.upgrade(_config(connection), revision)


def head():
    """The newest revision this nova_ext knows."""
    return script.ScriptDirectory.from_config(_config(None)).get_current_head()


def current(engine=None):
    """The revision of nova_ext's API database tables, or None."""
    with (engine or _engine()).connect() as connection:
        return alembic_migration.MigrationContext.configure(
            connection, opts={'version_table': VERSION_TABLE}
        ).get_current_revision()
