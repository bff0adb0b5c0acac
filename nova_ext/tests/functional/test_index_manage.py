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
"""nova-ext-manage index: sync, verify/fix, status, against a live cloud.

No notification reaches the index in these tests (no consumer is enabled),
so every change after a sync is drift that only verify can find and fix.
"""

import io
import json
import time

from nova import context as nova_context
from nova.db.main import api as main_db_api
from oslo_upgradecheck import upgradecheck

from nova_ext.cmd import manage
from nova_ext.cmd import manage_index
from nova_ext.cmd import status as status_cmd
from nova_ext import conf as ext_conf
from nova_ext.index import pending
from nova_ext.index import sync
from nova_ext.tests.functional import test_index_parity


class TestManageIndex(test_index_parity.IndexTestCase):

    def manage(self, *argv):
        args = manage.build_parser().parse_args(['index'] + list(argv))
        out = io.StringIO()
        code = manage_index.run(nova_context.get_admin_context(),
                                ext_conf.CONF, args, out=out)
        return code, out.getvalue()

    def verify(self, *extra):
        code, out = self.manage('verify', '--format', 'json', *extra)
        reports = json.loads(out)
        totals = {}
        for report in reports:
            for key, value in report['counts'].items():
                totals[key] = totals.get(key, 0) + value
        return code, totals

    def test_sync_verify_fix_status(self):
        keep = self._create_server(host='compute1-1', networks='none')
        gone = self._create_server(host='compute2-1', networks='none')
        self.assertEqual(0, self.manage('db_sync')[0])
        code, out = self.manage('sync')
        self.assertEqual(0, code, out)
        self.assertIn('written 1', out)
        code, totals = self.verify()
        self.assertEqual((0, 0, 0, 0), (code, totals['missing'],
                                        totals['stale'], totals['extra']))
        self.assertEqual(2, totals['checked'])
        self.assertSameAnswer(self.admin_api, 'servers/detail')

        # Drift of every kind: a new server (missing), a deleted one and a
        # tag, which Nova changes without notifying (stale), an archived
        # row (extra).
        self._create_server(host='compute1-1', networks='none')
        self.api.api_put('/servers/%s/tags/blue' % keep['id'], None,
                         check_response_status=[201])
        self._delete_server(gone)
        code, totals = self.verify()
        self.assertEqual(1, code)
        # The tag too: Nova notifies it but does not touch updated_at.
        self.assertEqual((1, 2), (totals['missing'], totals['stale']))
        ctx = nova_context.get_admin_context()
        for cell in sync.cells(ctx):
            with nova_context.target_cell(ctx, cell) as cctxt:
                main_db_api.archive_deleted_rows(cctxt, max_rows=1000)
        code, totals = self.verify()
        self.assertEqual((1, 1, 1), (totals['missing'], totals['stale'],
                                     totals['extra']))

        code, totals = self.verify('--fix')
        self.assertEqual(0, code)
        self.assertEqual(3, totals['fixed'])
        code, totals = self.verify()
        self.assertEqual((0, 0, 0, 0), (code, totals['missing'],
                                        totals['stale'], totals['extra']))
        for uri in ('servers/detail?all_tenants=1&deleted=true',
                    'servers/detail?tags=blue', 'servers'):
            self.assertSameAnswer(self.admin_api, uri)

        code, out = self.manage('status', '--format', 'json')
        status = json.loads(out)
        self.assertEqual(0, code, out)
        self.assertTrue(status['healthy'])
        self.assertEqual(status['head'], status['revision'])
        self.assertEqual(2, sum(c['instances'] for c in status['cells']))
        self.assertEqual(1, len(status['api']), status['api'])
        self.assertGreaterEqual(status['api'][0]['counts']['served'], 1)

    def test_sync_resumes(self):
        for host in ('compute1-1', 'compute1-1', 'compute1-1'):
            self._create_server(host=host, networks='none')
        self.flags(batch_size=1, group='nova_ext_index')
        ctx = nova_context.get_admin_context()
        cell1 = sync.cells(ctx, 'cell1')[0]

        class Interrupt(Exception):
            pass

        def stop_after_two(n, seen=[]):
            seen.append(n)
            if len(seen) == 2:
                raise Interrupt()
        self.assertRaises(Interrupt, sync.sync_cell, ctx, ext_conf.CONF,
                          cell1, progress=stop_after_two)
        totals = sync.sync_cell(ctx, ext_conf.CONF, cell1)
        # Two were written before the interruption; the rest after.
        self.assertEqual(1, totals['written'])
        code, out = self.manage('verify', '--cell', 'cell1')
        self.assertEqual(0, code, out)


class TestStatusCheck(test_index_parity.IndexTestCase):

    def check(self):
        checks = status_cmd.Checks(ext_conf.CONF)
        return checks._check_instance_index()

    def test_check_follows_the_index(self):
        code = upgradecheck.Code
        self.flags(driver='cells', group='nova_ext_instance_list')
        self.assertEqual(code.SUCCESS, self.check().code)
        self.flags(driver='index', group='nova_ext_instance_list')
        result = self.check()
        self.assertEqual(code.WARNING, result.code)
        self.assertIn('never synced', result.details)
        self._create_server(host='compute1-1', networks='none')
        self.sync_index()
        result = self.check()
        self.assertEqual(code.SUCCESS, result.code, result.details)
        self.assertIn('1 instances in 3 cells', result.details)
        pending.mark(self.index.engine, [('x', time.time() - 600)])
        self.assertEqual(code.WARNING, self.check().code)
        self.flags(connection='mysql+pymysql://u:p@127.0.0.1:9/x',
                   group='nova_ext_index')
        self.assertEqual(code.FAILURE, self.check().code)
