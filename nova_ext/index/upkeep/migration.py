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
"""Schema migrations of the instance index database (alembic)."""

import os

from alembic import command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script

from nova_ext.index import db
from nova_ext.index import sqlite
from nova_ext.index.upkeep import rules

_SCRIPTS = os.path.join(os.path.dirname(__file__), 'migrations')


def _config(connection):
    cfg = alembic_config.Config()
    cfg.set_main_option('script_location', _SCRIPTS)
    cfg.attributes['connection'] = connection
    return cfg


def db_sync(conf, revision='head'):
    """Create or upgrade the index schema to ``revision``."""
    # The only command that makes the SQLite file.
    sqlite.create_file(db.connection_url(conf))
    engine = db.get_engine(conf)
    # Not in a transaction of its own: each revision commits in its own
    # (see migrations/env.py).
    with engine.connect() as connection, db.patient(connection):
        command.upgrade(_config(connection), revision)


def head():
    """The newest revision this nova_ext knows."""
    return script.ScriptDirectory.from_config(_config(None)).get_current_head()


def current(conf):
    """The index schema's revision, or None if it has none."""
    engine = db.get_engine(conf)
    with engine.connect() as connection:
        return alembic_migration.MigrationContext.configure(
            connection).get_current_revision()


def problem(conf):
    """Why this nova_ext cannot use the index's schema, or None."""
    return rules.schema(current(conf), head(), revisions())


def revisions():
    """Every revision this nova_ext knows, oldest first."""
    scripts = script.ScriptDirectory.from_config(_config(None))
    return [r.revision for r in reversed(list(scripts.walk_revisions()))]
