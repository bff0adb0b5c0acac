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
"""The periodic reconcile heals a live multi-cell cloud's index.

No notification reaches the index here (no consumer is enabled), so every
change after the sync is drift that only the reconcile pass can heal.
"""

import datetime

from nova import context as nova_context
from nova.db.main import api as main_db_api
import sqlalchemy as sa

from nova_ext import conf as ext_conf
from nova_ext.index.apply import source
from nova_ext.index.marks import holders
from nova_ext.index.repair import reconcile
from nova_ext.index.repair import sync
from nova_ext.index.repair import verify
from nova_ext.index.upkeep import status
from nova_ext.tests.functional import test_index_parity

CONF = ext_conf.CONF


class TestReconcile(test_index_parity.IndexTestCase):

    # Its leases are holders whose heartbeats are green threads of the
    # harness's one process: every list must be served all the same.
    EVERY_LIST_SERVED = True

    def drift(self, ctx):
        totals = {'missing': 0, 'stale': 0, 'extra': 0}
        for cell in sync.cells(ctx):
            report = verify.verify_cell(ctx, CONF, cell, fix=False)
            for kind in totals:
                totals[kind] += report.counts[kind]
        return totals

    def test_one_pass_heals_every_kind_of_drift(self):
        renamed = self._create_server(host='compute1-1', networks='none')
        gone = self._create_server(host='compute2-1', networks='none')
        self.sync_index()
        ctx = nova_context.get_admin_context()
        self.assertEqual({'missing': 0, 'stale': 0, 'extra': 0},
                         self.drift(ctx))

        # A new server (missing); a change made straight in a cell
        # database, as Nova's own tools do, with no notification (stale);
        # a deleted server whose row Nova then archives (extra).
        self._create_server(host='compute2-1', networks='none')
        cell1 = sync.cells(ctx, 'cell1')[0]
        with nova_context.target_cell(ctx, cell1) as cctxt:
            main_db_api.instance_update(cctxt, renamed['id'],
                                        {'display_name': 'renamed'})
        self._delete_server(gone)
        for cell in sync.cells(ctx):
            with nova_context.target_cell(ctx, cell) as cctxt:
                main_db_api.archive_deleted_rows(cctxt, max_rows=1000)
        self.assertEqual({'missing': 1, 'stale': 1, 'extra': 1},
                         self.drift(ctx))

        indexer_a, indexer_b = holders.Lease(CONF), holders.Lease(CONF)
        self.addCleanup(indexer_a.stop)
        self.addCleanup(indexer_b.stop)
        reconciler = reconcile.Reconciler(CONF, lease=indexer_a)
        done = reconciler.run_once(ctx)
        self.assertEqual((3, 3, []), (done.drift, done.fixed, done.failed))
        self.assertEqual(sorted(c.name for c in sync.cells(ctx)),
                         sorted(c['cell'] for c in done.cells))
        self.assertEqual({'missing': 0, 'stale': 0, 'extra': 0},
                         self.drift(ctx))
        for uri in ('servers/detail', 'servers/detail?name=renamed',
                    'servers/detail?all_tenants=1&deleted=true'):
            self.assertSameAnswer(self.admin_api, uri)

        # The lease was taken and given back with the pass recorded; the
        # next pass is an interval away, timed by the indexer that ran it.
        lease = reconcile.read(self.index.engine)
        self.assertIsNone(lease['holder'])
        self.assertEqual(indexer_a.name, lease['timer'])
        self.assertEqual(3, lease['last_result']['fixed'])
        self.assertIsNone(reconcile.Reconciler(
            CONF, lease=indexer_b).run_once(ctx))
        self.assertIsNone(reconciler.run_once(ctx))
        line = [text for text in status.lines(status.collect(ctx, CONF))
                if text.startswith('reconcile:')]
        self.assertRegex(line[0], r'last pass \d+ s ago by [^:]+/\d+: '
                                  r'drift 3, fixed 3; next \d+ s after it, '
                                  r'timed by [^:]+/\d+$')

    def test_a_pass_heals_rows_changed_in_the_index_itself(self):
        server = self._create_server(host='compute1-1', networks='none')
        self.sync_index()
        ctx = nova_context.get_admin_context()
        # The index's copy changed, the cell's and the index's book did not:
        # a re-read finds the rows the book says the index holds.
        instances = source.INSTANCES
        with self.index.engine.begin() as conn:
            conn.execute(sa.update(instances).where(
                instances.c.uuid == server['id']).values(
                display_name='damaged',
                updated_at=datetime.datetime(2001, 1, 1)))
        self.assertEqual({'missing': 0, 'stale': 1, 'extra': 0},
                         self.drift(ctx))
        done = reconcile.Reconciler(CONF).run_once(ctx)
        self.assertEqual((1, 1, []), (done.drift, done.fixed, done.failed))
        self.assertEqual({'missing': 0, 'stale': 0, 'extra': 0},
                         self.drift(ctx))
        self.assertSameAnswer(self.admin_api, 'servers/detail')
