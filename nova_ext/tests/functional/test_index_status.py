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
"""Status, metrics and nova-ext-status say what nova-api does.

In each state of the index that decides nova-api's choice (every change
recorded, more marks pending than ``catch_up_limit``, changes a nova-api
process could not record), a real list request is made, and what it did
(served by the index or handed to Nova, by its counters) is compared with
what ``nova-ext-manage index status``, the ``healthy`` metric and
``nova-ext-status upgrade check`` say at the same moment.
"""

import os
import socket
import time

from nova import context as nova_context
from oslo_upgradecheck import upgradecheck
import sqlalchemy as sa

from nova_ext.cmd import status as status_cmd
from nova_ext import conf as ext_conf
from nova_ext.index.marks import holders
from nova_ext.index.marks import pending
from nova_ext.index.marks import process
from nova_ext.index.marks import witness
from nova_ext.index.upkeep import exporter
from nova_ext.index.upkeep import status
from nova_ext.instance_list import serving
from nova_ext.tests.functional import test_index_manage
from nova_ext.tests.functional import test_index_metrics

CONF = ext_conf.CONF
URI = 'servers/detail?all_tenants=1'
LISTS = 'nova-api lists from the index'

#: Makes the index refuse every mark: what nova-api captures stays
#: unrecorded, while its counters are still published.
REFUSE_MARKS = ("CREATE TRIGGER refuse_marks BEFORE INSERT ON "
                "nova_ext_index_pending BEGIN SELECT RAISE(ABORT, 'marks "
                "refused, as the test asked'); END")


class TestStatusSaysWhatNovaApiDoes(test_index_manage.ManageTestCase):

    NOVA_EXT_OPTIONS = {
        'nova_ext_instance_list': {'driver': 'index', 'retry_interval': 1},
        'nova_ext_index': {'catch_up_limit': 1, 'max_lag': 30}}

    def setUp(self):
        super().setUp()
        self.servers = [
            self._create_server(host=host, networks='none')['id']
            for host in ('compute1-1', 'compute2-1')]
        self.sync_index()
        # Each list below is the first of a report interval, so that it
        # publishes its process's counters; the latch's clock moves with
        # it (past retry_interval).
        self.now = [time.monotonic()]
        self.selector.clock = lambda: self.now[0]
        self.process = '%s/%d' % (socket.gethostname(), os.getpid())

    def list_servers(self, served):
        """One list, served by the index or not; its counters published."""
        self.now[0] += self.selector.report_interval
        before = self.selector.stats.snapshot()
        self.assertSameAnswer(self.admin_api, URI, served=served)
        self.selector.wait_reported(10)
        after = self.selector.stats.snapshot()
        return {k: after[k] - before[k] for k in serving.Stats.FIELDS
                if after[k] != before[k]}, after['last_reason']

    def assertTold(self, reason=None):
        """Every report says nova-api lists from the index, or ``reason``.

        :param reason: the one line saying why nova-api answers from Nova.
        """
        report = self.report = status.collect(
            nova_context.get_admin_context(), CONF)
        code, out = self.manage('status')
        scraped = self.scraped = test_index_metrics.scrape(
            exporter.IndexCollector(CONF, nova_context.get_admin_context))
        check = status_cmd.Checks(CONF)._check_instance_index()
        if reason is None:
            self.assertEqual((True, [], 0), (report['healthy'],
                                             report['reasons'], code), out)
            self.assertIn('health:          OK: %s' % LISTS, out)
            self.assertEqual(1, scraped[('nova_ext_index_healthy', ())])
            self.assertEqual(upgradecheck.Code.SUCCESS, check.code,
                             check.details)
            self.assertIn(LISTS, check.details)
            return
        self.assertEqual((False, 1), (report['healthy'], code), out)
        (said,) = report['reasons']
        self.assertRegex(said, reason)
        self.assertIn('health:          NOT OK: %s' % said, out)
        self.assertNotIn(LISTS, out)
        self.assertEqual(0, scraped[('nova_ext_index_healthy', ())])
        self.assertEqual(upgradecheck.Code.WARNING, check.code)
        self.assertIn(said, check.details)

    def test_all_recorded(self):
        # One mark pending, recorded long ago by its writer's clock: the
        # request applies it, within catch_up_limit, whatever its age.
        pending.mark(self.index.engine, [(self.servers[0],
                                          time.time() - 600)])
        self.assertTold()
        self.assertEqual(1, self.report['pending'])
        self.assertGreaterEqual(self.report['oldest_pending_age'], 600)
        self.assertEqual({'served': 1}, self.list_servers(True)[0])
        self.assertEqual({}, pending.take(self.index.engine, 10))
        self.assertTold()
        (api,) = self.report['api']
        self.assertEqual((0, 0.0), (api['unrecorded'], api['unrecorded_lag']))

    def test_marks_pending_above_catch_up_limit(self):
        pending.mark(self.index.engine, [(uuid, time.time())
                                         for uuid in self.servers])
        self.assertTold(r'^nova-api answers from Nova: 2 marks pending, '
                        r'catch_up_limit 1$')
        counted, last_reason = self.list_servers(False)
        self.assertEqual({'unservable': 1}, counted)
        self.assertEqual('at least 2 marks pending, catch_up_limit 1',
                         last_reason)
        self.assertEqual(2, len(pending.take(self.index.engine, 10)))
        self.assertTold(r'2 marks pending')
        # The worker's share applied, the request applies the rest.
        pending.unmark(self.index.engine,
                       pending.take(self.index.engine, 1))
        self.assertTold()
        self.assertEqual(({'served': 1}, 'at least 2 marks pending, '
                          'catch_up_limit 1'), self.list_servers(True))

    def refuse_marks(self):
        with self.index.engine.begin() as conn:
            conn.execute(sa.text(REFUSE_MARKS))

    def accept_marks(self):
        with self.index.engine.begin() as conn:
            conn.execute(sa.text('DROP TRIGGER refuse_marks'))
        self.assertTrue(process.get_batcher(CONF).flush(30))
        self.assertEqual({}, process.held())

    def test_changes_unrecordable(self):
        self.refuse_marks()
        process.get_batcher(CONF).add_all([self.servers[0]], time.time())
        self.assertEqual([self.servers[0]], list(process.held()))
        # No nova-api process has reported it yet: status cannot know.
        self.assertTold()
        counted, last_reason = self.list_servers(False)
        self.assertEqual({'unservable': 1}, counted)
        self.assertEqual('1 captured changes not recorded in the index yet',
                         last_reason)
        self.assertTold(r'^nova-api on %s answers from Nova: 1 captured '
                        r'changes not recorded in the index yet$'
                        % self.process)
        (api,) = self.report['api']
        self.assertEqual(1, api['unrecorded'])
        labels = (('driver', 'index'), ('host', socket.gethostname()),
                  ('pid', str(os.getpid())))
        self.assertEqual(1, test_index_metrics.scrape(exporter.IndexCollector(
            CONF, nova_context.get_admin_context))[(
                'nova_ext_index_api_unrecorded_changes', labels)])
        self.accept_marks()
        self.assertEqual(({'served': 1}, last_reason),
                         self.list_servers(True))
        self.assertTold()

    def test_changes_unrecordable_past_max_lag(self):
        self.refuse_marks()
        process.get_batcher(CONF).add_all([self.servers[0]],
                                          time.time() - 120)
        counted, last_reason = self.list_servers(False)
        self.assertEqual({'unavailable': 1}, counted)
        self.assertRegex(last_reason, r'^changes unrecorded for 1[23]\d\.\d '
                                      r's \(max_lag 30\.0 s\)$')
        self.assertTold(r'^nova-api on %s answers from Nova: changes '
                        r'unrecorded for 1[23]\d\.\d s \(max_lag 30\.0 s\)$'
                        % self.process)
        self.accept_marks()
        self.assertEqual(({'served': 1}, last_reason),
                         self.list_servers(True))
        self.assertTold()

    def test_another_holder_not_vouching(self):
        # A holder of marks as another process has: recorded while it had
        # changes it could not record, it beats without vouching.
        vouching = [False]
        other = holders.Lease(CONF)
        self.addCleanup(other.stop)
        other.ready = lambda timeout: vouching[0]
        name = other.ensure(self.index.engine)
        seen = witness.get_witness(CONF)
        recorded = time.monotonic()
        deadline = recorded + 30
        while (seen.last_read or 0) < recorded:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
        counted, last_reason = self.list_servers(False)
        self.assertEqual({'unservable': 1}, counted)
        said = ('1 holders of marks have not shown in 4.0 s that they '
                'recorded their changes (%s)' % name)
        self.assertEqual(said, last_reason)
        # Shown beside the process's counters, not judged (a report may
        # catch a process's first moments), and the holder's process
        # found by its name.
        self.assertTold()
        (api,) = self.report['api']
        self.assertEqual({'holders': [name], 'window': 4.0}, api['silent'])
        self.assertEqual(said, api['not_vouching'])
        self.assertIn((name, socket.gethostname(), os.getpid(), 0),
                      [(h['holder'], h['host'], h['pid'], h['vouches'])
                       for h in self.report['holders']])
        code, out = self.manage('status')
        self.assertIn('; %s' % said, out)
        self.assertIn('holder %s: %s/%d, ' % (name, socket.gethostname(),
                                              os.getpid()), out)
        self.assertScraped(name, not_vouching=1, vouches=0)
        # Once it vouches, lists are the index's again.
        vouching[0] = True
        while seen.silent(own=holders.get_lease(CONF).name) != []:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
        self.assertEqual({'served': 1}, self.list_servers(True)[0])
        self.assertTold()
        (api,) = self.report['api']
        self.assertEqual(({'holders': [], 'window': 4.0}, None),
                         (api['silent'], api['not_vouching']))
        self.assertScraped(name, not_vouching=0)

    def assertScraped(self, name, not_vouching, vouches=None):
        """The last scrape says what this process reported of ``name``.

        Scraped after the report was read (``assertTold``): beats may
        only have gone on in between.
        """
        got = self.scraped
        labels = (('driver', 'index'), ('host', socket.gethostname()),
                  ('pid', str(os.getpid())))
        self.assertEqual((1, not_vouching), (
            got[('nova_ext_index_api_holders_read', labels)],
            got[('nova_ext_index_api_holders_not_vouching', labels)]))
        holder = (('holder', name), ('host', socket.gethostname()),
                  ('pid', str(os.getpid())))
        row = [h for h in self.report['holders'] if h['holder'] == name]
        self.assertEqual(1, len(row))
        self.assertGreaterEqual(
            got[('nova_ext_index_holder_beats_total', holder)],
            row[0]['beats'])
        if vouches is not None:
            self.assertEqual(vouches, got[(
                'nova_ext_index_holder_vouches_total', holder)])
