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
"""Stored values Nova cannot load: every list answer is still Nova's.

Nova builds an object of every server a page shows (and, from 2.96, of its
request spec); a stored value that object refuses (an access IP that is
no address, a flavor that is no JSON, a
request spec of a newer version) fails Nova's list with a 500. Rows read
straight from the index are refused the same way: such a page is handed
to Nova, whose answer (the 500 and its body) is the answer. A page
without that server is nova_ext's. Each case is compared after the value
is written and indexed, twice, so that the second request meets the
caches.
"""

from unittest import mock

from nova import context as nova_context
from nova.db.api import api as api_db_api
from nova.db.api import models as api_models
from nova.db.main import api as main_db_api
from nova.db.main import models as nova_models
from nova import objects
from oslo_serialization import jsonutils
import sqlalchemy as sa

from nova_ext import conf as ext_conf
from nova_ext.index.repair import sync
from nova_ext.index.repair import verify
from nova_ext.seams import api as api_entry_point
from nova_ext.tests.functional import answers
from nova_ext.tests.functional import test_index_parity as parity

LISTS = ('servers?all_tenants=1', 'servers/detail?all_tenants=1')
DETAILS = ('servers/detail?all_tenants=1',)
#: Pages the damaged server is not on.
WITHOUT = ('servers?all_tenants=1&name=%5Egood%24',
           'servers/detail?all_tenants=1&name=%5Egood%24')


class _BadData(object):

    FAST_RENDER = True
    EVERY_LIST_SERVED = True

    def setUp(self):
        super().setUp()
        self.bad = self._create_server(name='bad', host='compute1-1',
                                       networks='none')
        self.good = self._create_server(name='good', host='compute2-1',
                                        networks='none')
        self.sync_index()
        for version in ('2.1', 'latest'):
            self.admin_api.microversion = version
            for uri in LISTS:
                self.assertSameAnswer(self.admin_api, uri, served=True)

    def bad_cell(self):
        ctx = nova_context.get_admin_context()
        return objects.InstanceMapping.get_by_instance_uuid(
            ctx, self.bad['id']).cell_mapping

    def write_cell(self, table, key, values):
        ctx = nova_context.get_admin_context()
        uuid = self.bad['id']
        with nova_context.target_cell(ctx, self.bad_cell()) as cctx:
            with main_db_api.get_context_manager(cctx).writer.using(cctx) as s:
                s.execute(sa.update(table).where(table.c[key] == uuid)
                          .values(**values))
        self.sync_index()

    def assertNovasFault(self, uri):
        """Nova fails ``uri`` with a 500, and so does the answer."""
        context = '%s (%s)' % (uri, self.admin_api.microversion)
        for _ in range(2):
            before = self.selector.stats.snapshot()
            got = answers.get(self._get, self.admin_api, uri)
            after = self.selector.stats.snapshot()
            with api_entry_point.stock_instance_list():
                want = answers.get(self._get, self.admin_api, uri)
            self.assertEqual(500, want.status_code, context)
            self.assertEqual((want.status_code, want.text),
                             (got.status_code, got.text), context)
            self.assertEqual(before['rendered'], after['rendered'], context)

    def assertLists(self, failing, versions=('2.1', 'latest')):
        """Lists of ``failing`` fail as Nova's; the others are served."""
        for version in versions:
            self.admin_api.microversion = version
            for uri in LISTS:
                if uri in failing:
                    self.assertNovasFault(uri)
                else:
                    for _ in range(2):
                        self.assertSameAnswer(self.admin_api, uri,
                                              served=True)
            for uri in WITHOUT:
                got = self.assertSameAnswer(self.admin_api, uri, served=True)
                self.assertEqual([self.good['id']],
                                 [s['id'] for s in got.json()['servers']])

    def test_an_access_ip_that_is_no_address(self):
        table = nova_models.Instance.__table__
        self.write_cell(table, 'uuid', {'access_ip_v4': 'not-an-address'})
        self.assertLists(LISTS)
        self.write_cell(table, 'uuid', {'access_ip_v4': None,
                                        'access_ip_v6': '192.0.2.1'})
        self.assertLists(LISTS)
        self.write_cell(table, 'uuid', {'access_ip_v6': '2001:db8::1'})
        self.assertLists(())

    def test_a_lock_holder_outside_its_enum(self):
        # Nova's query of the cell fails on the row: its lists take the
        # cell as down. The index cannot hold the row as Nova reads it,
        # and its change waits: every list is Nova's until it is mended.
        table = nova_models.Instance.__table__
        self.write_cell(table, 'uuid', {'locked': True, 'locked_by': 'x'})
        self.assertIn("instance %s of cell" % self.bad['id'],
                      self.stdlog.logger.output)
        self.assertIn("locked_by 'x' is not one of ['admin', 'owner']",
                      self.stdlog.logger.output)
        for version in ('2.1', 'latest'):
            self.admin_api.microversion = version
            for uri in LISTS + WITHOUT:
                self.assertSameAnswer(self.admin_api, uri, served=False)
        # Each list read the row again; it was logged once.
        self.assertEqual(1, self.stdlog.logger.output.count(
            'holds a value Nova cannot read'))
        ctx = nova_context.get_admin_context()
        report, = [verify.verify_cell(ctx, ext_conf.CONF, cell, fix=True)
                   for cell in sync.cells(ctx)
                   if cell.uuid == self.bad_cell().uuid]
        self.assertEqual(([self.bad['id']], 0),
                         (report.samples['stale'], report.counts['fixed']))
        # Mended by hand, outside Nova's objects: the waiting change is
        # read again at the next list.
        self.write_cell(table, 'uuid', {'locked_by': 'admin'})
        self.assertLists(())

    def test_a_flavor_that_is_no_json(self):
        # Nova's list without details loads no flavor.
        self.write_cell(nova_models.InstanceExtra.__table__, 'instance_uuid',
                        {'flavor': '{"cur": '})
        self.assertLists(DETAILS)

    def test_network_info_that_is_no_json(self):
        # Nova's list loads every server's network info, details or not.
        self.write_cell(nova_models.InstanceInfoCache.__table__,
                        'instance_uuid', {'network_info': '[{'})
        self.assertLists(LISTS)

    def test_a_request_spec_of_a_newer_version(self):
        # From 2.96 Nova's view loads the request spec of every server a
        # list shows, with details or without.
        @api_db_api.context_manager.writer
        def store(context):
            specs = api_models.RequestSpec.__table__
            where = specs.c.instance_uuid == self.bad['id']
            data = jsonutils.loads(context.session.execute(
                sa.select(specs.c.spec).where(where)).scalar_one())
            data['nova_object.version'] = '99.0'
            context.session.execute(
                specs.update().where(where).values(spec=jsonutils.dumps(data)))
        store(nova_context.get_admin_context())
        # Written by hand, outside Nova's objects: capture did not see it,
        # and the index learns of it as of any such edit, when it is
        # synced or repaired.
        self.sync_index()
        self.assertLists(LISTS, versions=('2.96', '2.100'))
        self.assertLists((), versions=('2.95',))


class TestBadDataIndexed(_BadData, parity.IndexTestCase):
    """Nova renders each page of the index's rows."""

    FAST_RENDER = False


class TestBadDataRendered(_BadData, parity.IndexTestCase):
    """nova_ext renders each page from the index's rows."""

    NOVA_EXT_OPTIONS = parity.FAST_OPTIONS

    def test_network_info_is_loaded_once_per_version(self):
        # A list without details loads what it does not read only for the
        # servers whose rows changed since.
        self.admin_api.microversion = 'latest'
        uri = 'servers?all_tenants=1'
        driver = self.selector.driver
        with mock.patch.object(driver, 'network_info',
                               wraps=driver.network_info) as read:
            self.assertSameAnswer(self.admin_api, uri, served=True)
            self.assertEqual(0, read.call_count)
            self.admin_api.put_server(self.good['id'],
                                      {'server': {'name': 'renamed'}})
            self.sync_index()
            self.assertSameAnswer(self.admin_api, uri, served=True)
        self.assertEqual([mock.call([self.good['id']])], read.call_args_list)


class TestBadDataCached(parity._RenderCacheMixin, TestBadDataRendered):
    """And keeps pages and documents: the request before meets them."""

    NOVA_EXT_OPTIONS = parity.CACHED_OPTIONS
