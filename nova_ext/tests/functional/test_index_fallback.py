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
"""When the index cannot answer, Nova does: same response, no error.

The spec's error conditions: the index unreachable, broken, or behind
(changes it cannot record).
Each time the request is answered by Nova's own path (byte-identical, as
checked by assertSameAnswer), the driver is switched off for
``retry_interval`` with a single warning, and is used again afterwards.
"""

import re
import sqlite3
import time
import urllib.parse

from nova import context as nova_context
from nova.db.api import api as api_db_api
from nova.db.main import api as main_db_api
from nova import objects
from nova.tests import fixtures as nova_fixtures
import sqlalchemy as sa

from nova_ext import conf as ext_conf
from nova_ext.index.marks import pending
from nova_ext.index.marks import process
from nova_ext.index.upkeep import migration as index_migration
from nova_ext.tests.functional import answers
from nova_ext.tests.functional import test_index_parity

#: Nothing listens on the discard port: connections are refused at once.
UNREACHABLE = 'mysql+pymysql://nova:secret@127.0.0.1:9/nova_ext_index'

#: A log record's first line, as the harness's stdlog formats it.
RECORD = re.compile(r'^\d{4}-\d\d-\d\d [\d:,]+ [A-Z]+ \[(?P<logger>[^\]]+)\]',
                    re.M)


def assertNoTraceback(test, log):
    """Fail if nova_ext, or Nova's API on a request, logged a traceback.

    Not the records of the harness's other services: they share one
    process, and a compute's periodic report reads whichever database the
    harness last switched to (CellDatabases._wrap_get_context_manager),
    which can fail in ways no real compute meets.
    """
    starts = [(m.start(), m.group('logger')) for m in RECORD.finditer(log)]
    ends = [start for start, _ in starts[1:]] + [len(log)]
    for (start, logger), end in zip(starts, ends):
        if logger.startswith(('nova_ext', 'nova.api')):
            test.assertNotIn('Traceback', log[start:end], log)


class TestIndexFallback(test_index_parity.IndexTestCase):

    def setUp(self):
        super().setUp()
        self.flags(retry_interval=1, group='nova_ext_instance_list')
        for host in ('compute1-1', 'compute2-1'):
            self._create_server(host=host, networks='none')
        self.sync_index()
        # Served by the index while it is healthy.
        self.assertSameAnswer(self.admin_api, 'servers/detail')

    def stats(self):
        return self.selector.stats.snapshot()

    def assertFallsBackThenRecovers(self, reason, heal):
        uri = 'servers/detail?all_tenants=1'
        # The latch's clock stands still until the test moves it: on a busy
        # machine one request through Nova can outlast the retry interval.
        now = [time.monotonic()]
        self.selector.clock = lambda: now[0]
        before = self.stats()
        self.assertSameAnswer(self.admin_api, uri, served=False)
        after = self.stats()
        self.assertEqual(before['unavailable'] + 1, after['unavailable'])
        self.assertIn(reason, after['last_reason'])
        # Latched: the next request does not even ask the index.
        self.assertSameAnswer(self.admin_api, uri, served=False)
        self.assertEqual(after['latched'] + 1, self.stats()['latched'])
        self.assertEqual(after['unavailable'], self.stats()['unavailable'])
        self.assertEqual(
            1, self.stdlog.logger.output.count('is off for 1 s'),
            'one warning per outage')
        heal()
        # Not served until this process read the holders table again: its
        # reads failed or waited while the index was away.
        self.wait_for_vouches(since=time.monotonic())
        now[0] += 1.1
        self.assertSameAnswer(self.admin_api, uri, served=True)

    def test_unreachable(self):
        connection = self.index.connection
        self.flags(connection=UNREACHABLE, group='nova_ext_index')
        self.assertFallsBackThenRecovers(
            'unreachable', lambda: self.flags(connection=connection,
                                              group='nova_ext_index'))

    def test_behind(self):
        # A change this process could not record for longer than max_lag:
        # another writer holds the index's lock.
        self.flags(max_lag=30, group='nova_ext_index')
        uuid = '11111111-2222-3333-4444-555555555555'
        blocker = sqlite3.connect(
            self.index.connection[len('sqlite:///'):], isolation_level=None)
        blocker.execute('BEGIN IMMEDIATE')
        marker = process.get_batcher(ext_conf.CONF)
        marker.add_all([uuid], time.time() - 120)

        def heal():
            blocker.execute('ROLLBACK')
            blocker.close()
            self.assertTrue(marker.flush(30))
        self.assertFallsBackThenRecovers('changes unrecorded for', heal)

    def test_marks_waiting_are_no_lag(self):
        # Recorded changes, however old, are applied by the request itself:
        # the index is not behind, and stays on.
        self.flags(max_lag=30, group='nova_ext_index')
        uuid = '11111111-2222-3333-4444-555555555555'
        pending.mark(self.index.engine, [(uuid, time.time() - 120)])
        self.assertSameAnswer(self.admin_api, 'servers/detail?all_tenants=1',
                              served=True)
        self.assertEqual({}, pending.take(self.index.engine, 10))

    def test_broken(self):
        with self.index.engine.begin() as conn:
            conn.execute(sa.text('ALTER TABLE instance_extra '
                                 'RENAME TO instance_extra_away'))

        def heal():
            with self.index.engine.begin() as conn:
                conn.execute(sa.text('ALTER TABLE instance_extra_away '
                                     'RENAME TO instance_extra'))
        self.assertFallsBackThenRecovers('instance_extra', heal)

    def test_schema_behind(self):
        # The index one revision behind this nova_ext, as after an upgrade
        # of the code before db_sync: one error that says what to run, Nova
        # answers meanwhile (retry after retry), and db_sync brings the
        # index back.
        revisions = index_migration.revisions()
        with self.index.engine.begin() as conn:
            conn.execute(sa.text('UPDATE alembic_version SET version_num = '
                                 ':r'), {'r': revisions[-2]})
            # What the head revision adds: the notifications recorded with
            # their marks (0014).
            conn.execute(sa.text('DROP TABLE nova_ext_index_told'))
        self.selector.driver._schema_checked = False
        now = [time.monotonic()]
        self.selector.clock = lambda: now[0]
        uri = 'servers/detail?all_tenants=1'
        for retry in range(3):
            self.assertSameAnswer(self.admin_api, uri, served=False)
            self.assertIn('run "nova-ext-manage index db_sync"',
                          self.stats()['last_reason'])
            now[0] += 1.1
        log = self.stdlog.logger.output
        self.assertEqual(1, log.count(
            'ERROR [nova_ext.instance_list.index] nova_ext: the index schema '
            'is at revision %s, this nova_ext needs %s' % tuple(
                revisions[-2:])), log)
        self.assertEqual(1, log.count('is off for 1 s'), log)
        assertNoTraceback(self, log)
        index_migration.db_sync(ext_conf.CONF)
        self.assertSameAnswer(self.admin_api, uri, served=True)

    def test_schema_ahead(self):
        # A later nova_ext's db_sync ran while this host still runs the
        # earlier one (a rolling upgrade): Nova answers, and the error says
        # to upgrade this host, not to run db_sync.
        with self.index.engine.begin() as conn:
            conn.execute(sa.text('UPDATE alembic_version SET version_num = '
                                 "'9999_later'"))
        self.selector.driver._schema_checked = False
        uri = 'servers/detail?all_tenants=1'
        self.assertSameAnswer(self.admin_api, uri, served=False)
        self.assertIn('upgrade nova_ext on this host',
                      self.stats()['last_reason'])
        log = self.stdlog.logger.output
        self.assertIn(
            'ERROR [nova_ext.instance_list.index] nova_ext: the index schema '
            'is at revision 9999_later, which this nova_ext (at %s) does not '
            'know' % index_migration.head(), log)
        assertNoTraceback(self, log)

    def test_a_request_s_own_failure_leaves_the_index_on(self):
        # An invalid regular expression fails Nova's query (a 500) and the
        # index's alike: Nova answers it, and nobody else's list loses the
        # index.
        uri = 'servers/detail?all_tenants=1&launch_index=['
        before = self.stats()
        got = self.assertSameAnswer(self.admin_api, uri, served=False)
        self.assertEqual(500, got.status_code)
        after = self.stats()
        self.assertEqual(before['unservable'] + 1, after['unservable'])
        self.assertEqual(before['unavailable'], after['unavailable'])
        self.assertIn("this request's index query failed",
                      after['last_reason'])
        self.assertSameAnswer(self.admin_api, 'servers/detail?all_tenants=1',
                              served=True)

    def test_a_request_s_own_slow_query_leaves_the_index_on(self):
        # A member's own costly regular expression (it backtracks over a
        # name made for it): Nova's answer is as slow. The list is counted
        # slow, and nobody else's list loses the index.
        self.flags(query_timeout=0.1, group='nova_ext_index')
        self._create_server(name='a' * 22 + '!', host='compute1-1',
                            networks='none')
        self.sync_index()
        before = self.stats()
        uri = 'servers?name=' + urllib.parse.quote('(a+)+$')
        self.assertSameAnswer(self.api, uri, served=True)
        after = self.stats()
        self.assertEqual(before['slow'] + 1, after['slow'])
        self.assertIn("that request's own query is slow",
                      after['last_reason'])
        self.assertEqual(before['latched'], after['latched'])
        self.assertIsNone(self.selector.latched_until)
        self.assertSameAnswer(self.admin_api, 'servers/detail?all_tenants=1',
                              served=True)

    def test_paths_nova_has_no_route_for(self):
        # Nova's router has no trailing-slash form of its routes; nova_ext
        # must not answer one (its own router comparison is a unit test).
        for uri in ('servers/', 'servers/detail/', 'servers/detail//',
                    'servers/detail/?all_tenants=1'):
            got = self.assertSameAnswer(self.admin_api, uri, served=False)
            self.assertEqual(404, got.status_code, uri)


class TestIndexDownCell(test_index_parity.IndexTestCase):
    """A cell that does not answer: Nova's own down-cell answers, at once.

    No earlier check stands in for the request's own: the first list made
    after the cell went down is Nova's, and so is the first one made after
    it came back (served by the index again).
    """

    URIS = ('servers/detail', 'servers')

    def assertEveryAnswer(self, served):
        for version in ('2.68', '2.69', 'latest'):
            for api in (self.admin_api, self.api):
                api.microversion = version
                for uri in self.URIS:
                    before = self.selector.stats.snapshot()
                    got = self.assertSameAnswer(api, uri, served=served)
                    self.assertEqual(200, got.status_code)
                    after = self.selector.stats.snapshot()
                    if served:
                        self.assertEqual(before['unservable'],
                                         after['unservable'])
                    else:
                        self.assertGreater(after['unservable'],
                                           before['unservable'])
                        self.assertIn('are down', after['last_reason'])

    def test_down_cell(self):
        for host in ('compute1-1', 'compute2-1'):
            self._create_server(host=host, networks='none')
        self.sync_index()
        # Every list was just served: a cached check would still say up.
        self.assertEveryAnswer(served=True)
        down = [self.cell_mappings['cell2']]
        with nova_fixtures.DownCellFixture(down):
            self.assertEveryAnswer(served=False)
        self.assertEveryAnswer(served=True)

    def rename(self, server, name):
        """Rename ``server`` in its cell and record the change."""
        ctx = nova_context.get_admin_context()
        cell = objects.InstanceMapping.get_by_instance_uuid(
            ctx, server['id']).cell_mapping
        with nova_context.target_cell(ctx, cell) as cctx:
            main_db_api.instance_update(cctx, server['id'],
                                        {'display_name': name})
        pending.mark(self.index.engine, [(server['id'], time.time())])

    def test_changes_read_in_the_pass_that_checks_the_cells(self):
        # Every cell up: the request reads the changed server from its cell
        # and asks the other cells the trivial query in one pass, and
        # makes no check of its own besides. A request nova_ext renders
        # has begun its check while it read the build requests: that one
        # is its check, and the pass reads the changed server alone.
        changed = self._create_server(host='compute1-1', networks='none')
        self._create_server(host='compute2-1', networks='none')
        self.sync_index()
        health = self.selector.driver.cells
        uri = 'servers/detail?all_tenants=1'
        self.rename(changed, 'renamed')
        checks = health.checks
        # One request through nova_ext (the render cache's comparison
        # lists twice), compared with Nova's answer made right after it.
        got = test_index_parity.IndexTestCase.assertSameAnswer(
            self, self.admin_api, uri, served=True)
        self.assertIn('renamed', got.text)
        self.assertEqual(0, pending.count(self.index.engine))
        begun = 1 if self.FAST_RENDER else 0
        self.assertEqual(checks + begun, health.checks)
        # Nothing to apply: the check is made on its own.
        answers.get(self._get, self.admin_api, uri)
        self.assertEqual(checks + begun + 1, health.checks)
        self.assertSameAnswer(self.admin_api, uri, served=True)

    def test_down_cell_with_changes_waiting(self):
        # A request that reads changed servers from their cells checks the
        # cells in the same pass: a cell down is found all the same,
        # whether it holds the change or not, and the change waits.
        changed = self._create_server(host='compute1-1', networks='none')
        self._create_server(host='compute2-1', networks='none')
        self.sync_index()
        uri = 'servers/detail?all_tenants=1'
        for n, down in enumerate(('cell2', 'cell1')):
            self.rename(changed, 'renamed-%d' % n)
            with nova_fixtures.DownCellFixture([self.cell_mappings[down]]):
                before = self.selector.stats.snapshot()
                self.assertSameAnswer(self.admin_api, uri, served=False)
                after = self.selector.stats.snapshot()
                self.assertGreater(after['unservable'], before['unservable'])
                self.assertIn('are down', after['last_reason'])
            if down == 'cell1':
                self.assertEqual(1, pending.count(self.index.engine))
            got = self.assertSameAnswer(self.admin_api, uri, served=True)
            self.assertIn('renamed-%d' % n, got.text)
            self.assertEqual(0, pending.count(self.index.engine))

    def test_the_api_database_failing_in_a_catch_up(self):
        # The changed server's cell answers; its request spec, in the API
        # database, cannot be read. The failure is the API database's, not
        # the cell's, and the change waits: nothing is lost.
        changed = self._create_server(host='compute1-1', networks='none')
        self.sync_index()
        uri = 'servers?all_tenants=1'
        # Before 2.96, where Nova's list reads no request spec: it answers.
        self.admin_api.microversion = '2.95'
        self.rename(changed, 'renamed')
        with api_db_api.get_engine().begin() as conn:
            conn.execute(sa.text(
                'ALTER TABLE request_specs RENAME TO request_specs_away'))
        try:
            before = self.selector.stats.snapshot()
            got = self.assertSameAnswer(self.admin_api, uri, served=False)
            after = self.selector.stats.snapshot()
        finally:
            with api_db_api.get_engine().begin() as conn:
                conn.execute(sa.text(
                    'ALTER TABLE request_specs_away RENAME TO request_specs'))
        self.assertEqual(200, got.status_code)
        self.assertGreater(after['unservable'], before['unservable'])
        self.assertEqual('1 changed instances could not be read and recorded',
                         after['last_reason'])
        log = self.stdlog.logger.output
        self.assertIn('could not read the request specs of 1 refreshed '
                      'instances from the API database', log)
        self.assertNotIn('could not refresh', log)
        self.assertNotIn('are down', log)
        self.assertEqual(1, pending.count(self.index.engine))
        got = self.assertSameAnswer(self.admin_api, uri, served=True)
        self.assertIn('renamed', got.text)
        self.assertEqual(0, pending.count(self.index.engine))


class TestRenderCacheDownCell(test_index_parity._RenderCacheMixin,
                              TestIndexDownCell):

    NOVA_EXT_OPTIONS = test_index_parity.CACHED_OPTIONS
    FAST_RENDER = True


class TestFastRenderFallback(TestIndexFallback):
    """The same outages with nova_ext rendering: counted once, Nova answers."""

    NOVA_EXT_OPTIONS = test_index_parity.FAST_OPTIONS
    FAST_RENDER = True


class TestFastRenderDownCell(TestIndexDownCell):

    NOVA_EXT_OPTIONS = test_index_parity.FAST_OPTIONS
    FAST_RENDER = True
