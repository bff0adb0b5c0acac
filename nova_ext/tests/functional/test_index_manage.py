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

import datetime
import io
import json
import time
from unittest import mock

from nova import context as nova_context
from nova.db.main import api as main_db_api
from oslo_upgradecheck import upgradecheck
import sqlalchemy as sa

from nova_ext.cmd import manage
from nova_ext.cmd import manage_index
from nova_ext.cmd import status as status_cmd
from nova_ext import conf as ext_conf
from nova_ext.index.apply import refresh
from nova_ext.index.apply import source
from nova_ext.index.apply import writer
from nova_ext.index.marks import pending
from nova_ext.index.repair import sync
from nova_ext.index import schema
from nova_ext.tests.functional import test_index_parity


class ManageTestCase(test_index_parity.IndexTestCase):

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


class TestManageIndex(ManageTestCase):

    def test_drift_healed_by_a_later_read_is_fixed(self):
        # A list's catch-up or the indexer may write an instance between
        # verify's read of it and verify's own write: that read began
        # later, and is the one the index keeps. Nothing is left to fix.
        server = self._create_server(host='compute1-1', networks='none')
        self.sync_index()
        self.api.api_put('/servers/%s/tags/blue' % server['id'], None,
                         check_response_status=[201])
        novas = writer.apply_reads
        later = []

        def a_later_read_first(engine, reads, rewrite=False):
            if not later:
                # Its own write is the next call, which goes on.
                later.append(None)
                later[0] = refresh.refresh(nova_context.get_admin_context(),
                                           ext_conf.CONF, [server['id']])
            return novas(engine, reads, rewrite)
        with mock.patch.object(writer, 'apply_reads', a_later_read_first):
            code, totals = self.verify('--fix')
        (written, stale), = [(t.written, t.stale) for t, _failed in later]
        self.assertEqual((1, 0), (written, stale))
        self.assertEqual((0, 1, 1), (code, totals['stale'], totals['fixed']))
        code, totals = self.verify()
        self.assertEqual((0, 0), (code, totals['stale']))
        self.assertSameAnswer(self.admin_api, 'servers/detail?tags=blue',
                              served=True)

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


class TestRetention(ManageTestCase):
    """Tombstones past deleted_retention that Nova has not archived yet."""

    def setUp(self):
        super().setUp()
        self.flags(deleted_retention=1, group='nova_ext_index')
        self.assertEqual(0, self.manage('db_sync')[0])

    def backdate(self, uuid, days=2, index=True):
        """Move a deleted instance's deleted_at ``days`` into the past."""
        when = datetime.datetime.utcnow() - datetime.timedelta(days=days)
        instances = source.INSTANCES
        ctx = nova_context.get_admin_context()
        changed = 0
        for cell in sync.cells(ctx):
            with nova_context.target_cell(ctx, cell) as cctxt:
                manager = main_db_api.get_context_manager(cctxt)
                with manager.writer.using(cctxt) as session:
                    changed += session.execute(sa.update(instances).where(
                        instances.c.uuid == uuid,
                        instances.c.deleted != 0).values(
                        deleted_at=when)).rowcount
        self.assertEqual(1, changed)
        if index:
            with self.index.engine.begin() as conn:
                conn.execute(sa.update(instances).where(
                    instances.c.uuid == uuid).values(deleted_at=when))
                conn.execute(sa.update(schema.INSTANCES).where(
                    schema.INSTANCES.c.uuid == uuid).values(deleted_at=when))

    def held(self, uuid):
        with self.index.engine.connect() as conn:
            return conn.execute(sa.select(schema.INSTANCES.c.deleted_at).where(
                schema.INSTANCES.c.uuid == uuid)).first()

    def purge(self):
        code, out = self.manage('purge')
        self.assertEqual(0, code, out)
        return int(out.split()[1])

    def assertNoDrift(self, expired=None):
        code, totals = self.verify()
        self.assertEqual((0, 0, 0, 0), (code, totals['missing'],
                                        totals['stale'], totals['extra']))
        if expired is not None:
            self.assertEqual(expired, totals['expired'])
        return totals

    def test_purged_tombstone_is_not_missing(self):
        self._create_server(host='compute1-1', networks='none')
        gone = self._create_server(host='compute1-1', networks='none')
        self._delete_server(gone)
        self.sync_index()
        self.assertIsNotNone(self.held(gone['id']).deleted_at)
        self.assertEqual(0, self.purge())
        self.assertNoDrift(expired=0)

        # Past the retention, and not archived by Nova: purge drops it, and
        # verify no longer wants it back.
        self.backdate(gone['id'])
        self.assertEqual(1, self.purge())
        self.assertIsNone(self.held(gone['id']))
        totals = self.assertNoDrift(expired=1)
        self.assertEqual(1, totals['checked'])

        # A reconcile pass (verify --fix, then purge) finds nothing to do,
        # pass after pass.
        for _ in range(2):
            code, totals = self.verify('--fix')
            self.assertEqual((0, 0), (code, totals['fixed']))
            self.assertEqual(0, self.purge())
            self.assertNoDrift(expired=1)
        self.assertIsNone(self.held(gone['id']))

        # Nor does a full sync copy it again.
        code, out = self.manage('sync', '--restart')
        self.assertEqual(0, code, out)
        self.assertIn('expired 1', out)
        self.assertIsNone(self.held(gone['id']))
        self.assertEqual(0, self.purge())
        self.assertNoDrift(expired=1)
        for uri in ('servers/detail', 'servers?all_tenants=1'):
            self.assertSameAnswer(self.admin_api, uri)

    def test_unpurged_tombstone_is_left_to_purge(self):
        # The index holds the expired tombstone (no purge ran yet): it is
        # neither missing nor extra, purge drops it.
        gone = self._create_server(host='compute2-1', networks='none')
        self._delete_server(gone)
        self.sync_index()
        self.backdate(gone['id'])
        self.assertNoDrift(expired=1)
        self.assertEqual(1, self.purge())
        self.assertNoDrift(expired=1)

    def test_deletion_never_seen_past_retention(self):
        # The index still holds the instance alive: that is drift, healed
        # by writing its tombstone, which purge then drops.
        gone = self._create_server(host='compute1-1', networks='none')
        self.sync_index()
        self._delete_server(gone)
        self.backdate(gone['id'], index=False)
        code, totals = self.verify()
        self.assertEqual((1, 1, 0), (code, totals['stale'],
                                     totals['expired']))
        code, totals = self.verify('--fix')
        self.assertEqual((0, 1), (code, totals['fixed']))
        self.assertEqual(1, self.purge())
        self.assertIsNone(self.held(gone['id']))
        self.assertNoDrift(expired=1)

    def test_tombstone_within_retention(self):
        # Deleted a day ago at most: still the index's to keep, and drift
        # is reported and fixed as ever.
        gone = self._create_server(host='compute1-1', networks='none')
        self.sync_index()
        self._delete_server(gone)
        code, totals = self.verify()
        self.assertEqual((1, 1, 0), (code, totals['stale'],
                                     totals['expired']))
        code, totals = self.verify('--fix')
        self.assertEqual((0, 1), (code, totals['fixed']))
        self.assertEqual(0, self.purge())
        self.assertIsNotNone(self.held(gone['id']).deleted_at)
        self.assertNoDrift(expired=0)

        refresh.remove(self.index.engine, [gone['id']])
        code, totals = self.verify()
        self.assertEqual((1, 1), (code, totals['missing']))
        code, totals = self.verify('--fix')
        self.assertEqual((0, 1), (code, totals['fixed']))
        self.assertEqual(0, self.purge())
        self.assertIsNotNone(self.held(gone['id']))
        self.assertNoDrift(expired=0)


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
        # An old mark is applied by the next list: nova-api lists from
        # the index while no more than catch_up_limit are pending.
        pending.mark(self.index.engine, [('x', time.time() - 600)])
        self.assertEqual(code.SUCCESS, self.check().code)
        self.flags(catch_up_limit=0, group='nova_ext_index')
        result = self.check()
        self.assertEqual(code.WARNING, result.code)
        self.assertEqual('nova-api answers from Nova: 1 marks pending, '
                         'catch_up_limit 0. Is the indexer (or an in-process '
                         'index worker) running?', result.details)
        self.flags(connection='mysql+pymysql://u:p@127.0.0.1:9/x',
                   group='nova_ext_index')
        self.assertEqual(code.FAILURE, self.check().code)
