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
"""The links ``nova-ext-manage db online_data_migrations`` writes reach
the instance index, with change capture on.

``compute_id`` is one of the instance columns the index holds: a link the
index did not see is drift that ``index verify`` reports.
"""

import io

from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova.db.main import models
import sqlalchemy as sa

from nova_ext.cmd import manage
from nova_ext.cmd import manage_db
from nova_ext import conf as ext_conf
from nova_ext.index import db as index_db
from nova_ext.index import schema
from nova_ext.seams import db_writes
from nova_ext.tests.functional import test_index_manage
from nova_ext.tests.functional import test_index_parity

INSTANCES = models.Instance.__table__


class TestLinksCaptured(test_index_manage.ManageTestCase):

    NOVA_EXT_OPTIONS = dict(test_index_parity.IndexTestCase.NOVA_EXT_OPTIONS,
                            nova_ext_index={'capture': True})

    def setUp(self):
        super().setUp()
        self.addCleanup(db_writes.detach)
        self.flags(migrations=['instance-compute-id'],
                   group='nova_ext_object_migrations')

    def _unlink(self, uuids):
        # On a bare connection, which capture does not see: records as an
        # upgrade from before the links finds them.
        ctx = nova_context.get_admin_context()
        with nova_context.target_cell(ctx, self.cell_mappings['cell1']) as c:
            with main_db_api.get_context_manager(c).writer.using(c) as s:
                s.connection().execute(sa.update(INSTANCES).where(
                    INSTANCES.c.uuid.in_(uuids)).values(compute_id=None))

    def _marked(self, uuids):
        c = schema.PENDING.c
        with index_db.get_engine(ext_conf.CONF).connect() as conn:
            return {row.uuid for row in conn.execute(
                sa.select(c.uuid).where(c.uuid.in_(uuids)))}

    def test_links_reach_the_index(self):
        uuids = sorted(self._create_server(host='compute1-1',
                                           networks='none')['id']
                       for _ in range(2))
        self.sync_index()
        self._unlink(uuids)
        code, totals = self.verify('--fix')
        self.assertEqual((0, 2, 2), (code, totals['stale'], totals['fixed']))
        args = manage.build_parser().parse_args(
            ['db', 'online_data_migrations'])
        out = io.StringIO()
        self.assertEqual(0, manage_db.run(nova_context.get_admin_context(),
                                          ext_conf.CONF, args, out=out),
                         out.getvalue())
        # Marked with the write, as Nova's own writes are.
        self.assertEqual(set(uuids), self._marked(uuids))
        # A list applies what is marked, and answers as Nova does.
        self.assertSameAnswer(self.admin_api, 'servers/detail', served=True)
        code, totals = self.verify()
        self.assertEqual((0, 0), (code, totals['stale']))
