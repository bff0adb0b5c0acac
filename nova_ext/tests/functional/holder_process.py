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
"""A Nova process that holds marks and never lets go, for test_index_holders.

Run as ``python -m nova_ext.tests.functional.holder_process --config-file
nova.conf UUID...``. It starts the way Nova's services do, creates the
cell database's schema and one instance per uuid, then opens one Nova
transaction that updates them all and, with the transaction open (its
marks held in the index), prints ``held`` and waits to be killed.
"""

import sys
import time

from nova import config
from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova.db.main import models
from nova.db import migration


def main(argv):
    uuids = argv[3:]
    config.parse_args(argv[:3])
    migration.db_sync(database='main')
    ctx = nova_context.get_admin_context()
    for uuid in uuids:
        main_db_api.instance_create(
            ctx, {'uuid': uuid, 'project_id': 'p', 'user_id': 'u'})
    with main_db_api.context_manager.writer.using(ctx) as session:
        session.query(models.Instance).filter(
            models.Instance.uuid.in_(uuids)).update(
            {'display_name': 'held'}, synchronize_session=False)
        print('held')
        sys.stdout.flush()
        while True:
            time.sleep(60)


if __name__ == '__main__':
    main(sys.argv)
