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
"""A Nova process set up as nova-conductor is, for test_capture_process.

Run as ``python -m nova_ext.tests.functional.conductor_process --config-file
nova.conf``. It starts the way Nova's services do (``nova.config.parse_args``,
which runs ``rpc.init`` and so builds the notifiers with their drivers),
creates the cell database's schema, then makes Nova database writes to one
instance through ``nova.db.main.api``. Right after each write returns, it
reads the index's pending table with the bare sqlite3 module, and prints
one JSON line per write: whether the instance was marked by then.
"""

import json
import sqlite3
import sys

from nova import config
from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova.db import migration

from nova_ext.index.marks import process

UUID = '0b0b0b0b-0000-4000-8000-000000000001'


def _marked(index_path):
    with sqlite3.connect(index_path) as conn:
        return [row[0] for row in conn.execute(
            'SELECT uuid FROM nova_ext_index_pending')]


def _clear(index_path):
    with sqlite3.connect(index_path) as conn:
        conn.execute('DELETE FROM nova_ext_index_pending')


def main(argv):
    config.parse_args(argv)
    index_path = config.CONF.nova_ext_index.connection[len('sqlite:///'):]
    migration.db_sync(database='main')
    ctx = nova_context.get_admin_context()
    writes = [
        ('instance_create', lambda: main_db_api.instance_create(
            ctx, {'uuid': UUID, 'project_id': 'p', 'user_id': 'u'})),
        ('instance_update', lambda: main_db_api.instance_update(
            ctx, UUID, {'display_name': 'renamed'})),
        ('instance_info_cache_update',
         lambda: main_db_api.instance_info_cache_update(
             ctx, UUID, {'network_info': '[]'})),
        ('instance_fault_create', lambda: main_db_api.instance_fault_create(
            ctx, {'instance_uuid': UUID, 'code': 500, 'message': 'm',
                  'details': 'd', 'host': 'h'})),
        ('instance_tag_add', lambda: main_db_api.instance_tag_add(
            ctx, UUID, 't1')),
        ('instance_destroy', lambda: main_db_api.instance_destroy(
            ctx, UUID)),
    ]
    for name, write in writes:
        # Each write from an index without marks: the previous write's
        # release recorded first, so that nothing of it is left to hold
        # this one.
        process.get_batcher(config.CONF).flush(10)
        _clear(index_path)
        write()
        print(json.dumps({'write': name, 'marked': _marked(index_path)}))
        sys.stdout.flush()


if __name__ == '__main__':
    main(sys.argv)
