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
"""The searchlight driver, at the HTTP boundary.

No Searchlight can run here (it is retired and needs Elasticsearch 5): the
real python-searchlightclient and keystoneauth talk to requests_mock, with
a Keystone token from keystoneauth's fixture whose catalog has the
``search`` service. The tests pin the exact request bodies, and feed back
answers shaped as Searchlight's Nova server plugin wrote its documents.
The cells are stood in for by Nova's fake database rows here; the real cell
reads are in the functional test_searchlight_driver.
"""

import configparser
import copy
import datetime
import importlib
import os
import sys
from unittest import mock

import fixtures
from keystoneauth1 import fixture as ks_fixture
from keystoneauth1 import loading as ks_loading
from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects
from nova.tests.unit import fake_instance
from oslo_utils import timeutils
import requests
from requests_mock.contrib import fixture as rm_fixture

from nova_ext.conf import searchlight as sl_conf
from nova_ext import exception
from nova_ext.instance_list import base as list_base
from nova_ext.instance_list import cellhealth
from nova_ext.instance_list import searchlight
from nova_ext.instance_list import searchlight_overlay as overlay
from nova_ext.tests.unit import base

AUTH_URL = 'http://keystone.example/identity/v3'
SEARCH_URL = 'http://searchlight-int.example:9393/v1/search'
TYPE = 'OS::Nova::Server'

U1 = '0b6d3c9e-0a51-4c43-9d35-0a2a9f0c1a01'
U2 = '5f1e6a7b-3c2d-4e8f-9a0b-1c2d3e4f5a02'
U3 = 'a380287d-1f61-4887-959c-8c5ab8f75f03'
CELL1 = 'c0000000-0000-4000-8000-000000000001'
CELL2 = 'c0000000-0000-4000-8000-000000000002'

SOURCE = ['created_at', 'id', 'updated_at']
NOT_SOFT_DELETED = [{'term': {'OS-EXT-STS:vm_state': 'soft-delete'}}]
DEFAULT_SORT = [{'created_at': {'order': 'desc'}}, {'id': {'order': 'asc'}}]
# What compute.API.get_all always asks for, and what GET /servers/detail
# adds at the latest microversion.
NOVA_ATTRS = ['metadata', 'info_cache', 'security_groups']
DETAIL_ATTRS = NOVA_ATTRS + ['flavor', 'numa_topology', 'services', 'tags',
                             'trusted_certs', 'system_metadata']
# The driver's own functions, before the tests stub them.
WHOLE_SECONDS_CELLS = searchlight.whole_seconds_cells
CELL_RECORDS = searchlight.cell_records


def _time(value):
    return timeutils.normalize_time(timeutils.parse_isotime(value))


def api_doc(uuid, name, created, **extra):
    """A server as Searchlight indexed it from the compute API (bulk sync).

    serialize_nova_server: the API's server view, minus links and progress,
    with status lowercased, created copied to created_at, security groups
    as names and addresses also flattened into networks.
    """
    doc = {
        'OS-DCF:diskConfig': 'MANUAL',
        'OS-EXT-AZ:availability_zone': 'nova',
        'OS-EXT-SRV-ATTR:host': 'compute-1',
        'OS-EXT-SRV-ATTR:hypervisor_hostname': 'compute-1.example',
        'OS-EXT-SRV-ATTR:instance_name': 'instance-00000001',
        'OS-EXT-STS:power_state': 1,
        'OS-EXT-STS:task_state': None,
        'OS-EXT-STS:vm_state': 'active',
        'OS-SRV-USG:launched_at': '2017-06-01T10:00:07.000000',
        'OS-SRV-USG:terminated_at': None,
        'accessIPv4': '', 'accessIPv6': '',
        'addresses': {'private': [{'OS-EXT-IPS-MAC:mac_addr':
                                   'fa:16:3e:1e:37:32',
                                   'OS-EXT-IPS:type': 'fixed',
                                   'addr': '10.0.0.3', 'version': 4}]},
        'config_drive': '', 'created': created, 'created_at': created,
        'flavor': {'id': '1'}, 'hostId': 'd86d2c04', 'id': uuid,
        'image': {'id': '46b77e67-ce40-44ca-823d-e6f83489f21e'},
        'key_name': 'key', 'metadata': {'role': 'web'}, 'name': name,
        'networks': [{'name': 'private', 'version': 4,
                      'OS-EXT-IPS-MAC:mac_addr': 'fa:16:3e:1e:37:32',
                      'OS-EXT-IPS:type': 'fixed', 'ipv4_addr': '10.0.0.3'}],
        'os-extended-volumes:volumes_attached': [], 'owner': 'p1',
        'project_id': 'p1', 'security_groups': ['default'],
        'status': 'active', 'tags': ['blue'], 'tenant_id': 'p1',
        'updated': created, 'updated_at': created, 'user_id': 'u1',
    }
    doc.update(extra)
    return doc


def versioned_doc(uuid, name, created, **extra):
    """A server as serialize_server_versioned wrote it from a payload."""
    doc = {
        'id': uuid, 'name': name, 'description': None,
        'tenant_id': 'p1', 'project_id': 'p1', 'user_id': 'u1',
        'OS-EXT-STS:vm_state': 'stopped', 'status': 'shutoff',
        'OS-EXT-AZ:availability_zone': 'nova',
        'OS-EXT-SRV-ATTR:host': 'compute-2', 'power_state': 'shutdown',
        'created_at': created, 'updated_at': created, 'launched_at': created,
        'terminated_at': None, 'deleted_at': None, 'key_name': None,
        'locked': False, 'metadata': {}, 'tags': [],
        'flavor': {'id': '1'}, 'image': {'id': ''}, 'networks': [],
        'kernel_id': '', 'ramdisk_id': '', 'architecture': None,
        'os_type': None, 'reservation_id': 'r-3b9ui8jm',
    }
    doc.update(extra)
    return doc


def es_answer(*docs, **kwargs):
    """Searchlight's answer: Elasticsearch's own body, passed through."""
    hits = [{'_index': 'searchlight-search', '_type': TYPE,
             '_id': doc.get('id'), '_score': None, '_source': doc,
             'sort': [doc.get('created_at'), doc.get('id')]} for doc in docs]
    answer = {'took': 4, 'timed_out': False,
              '_shards': {'total': 5, 'successful': 5, 'failed': 0},
              'hits': {'total': len(hits), 'max_score': None,
                       'hits': hits}}
    answer.update(kwargs)
    return answer


def row_of(doc, **changes):
    """The cell row a document was written from (Nova's fake DB row)."""
    row = fake_instance.fake_db_instance(
        uuid=doc['id'], display_name=doc['name'],
        project_id=doc['tenant_id'], user_id=doc['user_id'],
        vm_state=doc['OS-EXT-STS:vm_state'], hostname='host-' + doc['name'],
        created_at=_time(doc['created_at']),
        updated_at=_time(doc['updated_at']), metadata=[])
    row.update(changes)
    return row


class SearchlightTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        objects.register_all()
        group = sl_conf.GROUP
        self.conf.register_opts(
            ks_loading.get_auth_plugin_conf_options('v3password'),
            group=group)
        self.flags(group=group, auth_type='v3password', auth_url=AUTH_URL,
                   username='nova', password='secret', project_name='service',
                   user_domain_id='default', project_domain_id='default')
        self.requests = self.useFixture(rm_fixture.Fixture())
        self.token = ks_fixture.V3Token(user_id='nova-user',
                                        project_id='service-project')
        service = self.token.add_service('search')
        service.add_standard_endpoints(
            public='http://searchlight.example:9393',
            internal='http://searchlight-int.example:9393',
            region='RegionOne')
        self.keystone = self.requests.post(
            AUTH_URL + '/auth/tokens', json=self.token,
            headers={'X-Subject-Token': 'a-token'})
        self.down = self.useFixture(fixtures.MockPatchObject(
            cellhealth.CellHealth, 'down_cells', return_value=[])).mock
        self.whole_seconds = self.useFixture(fixtures.MockPatchObject(
            searchlight, 'whole_seconds_cells', return_value=True)).mock
        # The cells: {uuid: row}, as Nova's query with the filters finds
        # them. The real reads are in the functional tests.
        self.rows = {}
        self.cell_reads = []
        self.useFixture(fixtures.MockPatchObject(
            searchlight, 'cell_records', self.fake_cell_records))
        self.useFixture(fixtures.MockPatchObject(
            searchlight, 'marker_record', self.fake_marker_record))
        self.admin = nova_context.RequestContext(
            user_id='admin-user', project_id='admin-project', is_admin=True)
        self.user = nova_context.RequestContext(
            user_id='u1', project_id='p1', is_admin=False)
        self.driver = searchlight.SearchlightDriver()

    def fake_cell_records(self, ctx, filters, uuids, attrs, timeout):
        self.cell_reads.append((ctx, copy.deepcopy(filters), list(uuids),
                                list(attrs), timeout))
        return {uuid: self.rows[uuid] for uuid in uuids if uuid in self.rows}

    def fake_marker_record(self, ctx, marker):
        if marker not in self.rows:
            raise nova_exception.MarkerNotFound(marker=marker)
        return self.rows[marker]

    def answer(self, *responses):
        """Searchlight answers these, in order (dicts are JSON bodies)."""
        return self.requests.post(SEARCH_URL, [
            r if 'status_code' in r or 'exc' in r else {'json': r}
            for r in responses])

    def serve(self, *docs):
        """Searchlight answers the docs, and the cells hold their rows."""
        for doc in docs:
            self.rows[doc['id']] = row_of(doc)
        self.answer(es_answer(*docs))

    def bodies(self, since=0):
        return [r.json() for r in self.requests.request_history[since:]
                if r.url == SEARCH_URL]

    def list(self, ctx=None, filters=None, limit=1000, marker=None,
             attrs=NOVA_ATTRS, keys=('created_at',), dirs=('desc',)):
        filters = {'deleted': False} if filters is None else filters
        return self.driver.get_instance_objects_sorted(
            ctx or self.admin, filters, limit, marker, list(attrs),
            list(keys) if keys is not None else None,
            list(dirs) if dirs is not None else None)


class TestRequestBodies(SearchlightTestCase):
    """What the driver asks Searchlight, for Nova's list queries."""

    def body(self, query, sort=DEFAULT_SORT, limit=1000, source=SOURCE):
        return {'type': TYPE, 'query': query, 'sort': sort, 'limit': limit,
                'offset': 0, 'all_projects': True, '_source': source}

    def test_matrix(self):
        by_uuid = [{'id': {'order': 'asc'}}]
        cases = [
            ('admin, all projects, the API default order',
             dict(), self.body({'bool': {'must_not': NOT_SOFT_DELETED}})),
            ('project scoping comes from the context, as in Nova',
             dict(ctx=self.user, filters={'deleted': False,
                                          'project_id': 'other'}, limit=25),
             self.body({'bool': {'filter': [{'term': {'tenant_id': 'p1'}}],
                                 'must_not': NOT_SOFT_DELETED}}, limit=25)),
            ('a context without project is scoped to its user',
             dict(ctx=nova_context.RequestContext(user_id='u9',
                                                  is_admin=False)),
             self.body({'bool': {'filter': [{'term': {'user_id': 'u9'}}],
                                 'must_not': NOT_SOFT_DELETED}})),
            ('exact filters, lists as terms; uuid given, no tie-breaker',
             dict(filters={'deleted': False, 'uuid': [U2, U1],
                           'vm_state': ['active'], 'user_id': 'u1',
                           'image_ref': U3, 'project_id': 'p1'},
                  keys=['vm_state', 'uuid'], dirs=['asc', 'desc'], limit=2),
             self.body({'bool': {
                 'filter': [{'term': {'image.id': U3}},
                            {'term': {'tenant_id': 'p1'}},
                            {'term': {'user_id': 'u1'}},
                            {'terms': {'id': [U1, U2]}},
                            {'terms': {'OS-EXT-STS:vm_state': ['active']}}],
                 'must_not': NOT_SOFT_DELETED}},
                 sort=[{'OS-EXT-STS:vm_state': {'order': 'asc'}},
                       {'id': {'order': 'desc'}}], limit=2,
                 source=['OS-EXT-STS:vm_state', 'id', 'updated_at'])),
            ('soft-deleted instances wanted: no exclusion',
             dict(filters={'deleted': False, 'soft_deleted': True},
                  keys=['uuid'], dirs=['asc']),
             self.body({'match_all': {}}, sort=by_uuid,
                       source=['id', 'updated_at'])),
            ('an empty IN matches nothing, as in Nova',
             dict(filters={'deleted': False, 'uuid': []},
                  keys=['uuid'], dirs=['asc']),
             self.body({'bool': {
                 'filter': [{'bool': {'must_not': [{'match_all': {}}]}}],
                 'must_not': NOT_SOFT_DELETED}},
                 sort=by_uuid, source=['id', 'updated_at'])),
            ('keys that are no Instance column are ignored, as in Nova',
             dict(filters={'deleted': False, 'ip': '^10\\.0\\.0\\.3$',
                           'uuid': [U1], 'hidden': False},
                  keys=['uuid'], dirs=['asc'], limit=1),
             self.body({'bool': {'filter': [{'terms': {'id': [U1]}}],
                                 'must_not': NOT_SOFT_DELETED}},
                       sort=by_uuid, limit=1, source=['id', 'updated_at'])),
            ('the attributes asked for are the cells\' business',
             dict(attrs=DETAIL_ATTRS + ['fault', 'pci_devices']),
             self.body({'bool': {'must_not': NOT_SOFT_DELETED}})),
        ]
        for name, kwargs, expected in cases:
            with self.subTest(name):
                since = len(self.requests.request_history)
                self.answer(es_answer())
                result, down = self.list(**kwargs)
                self.assertEqual(([], []), (list(result), down))
                self.assertEqual([expected], self.bodies(since))
        # An empty page reads no cell.
        self.assertEqual([], self.cell_reads)

    def test_marker_is_looked_up_then_searched_after(self):
        marker = api_doc(U2, 'web-2', '2017-06-01T10:00:05Z')
        self.rows[U2] = row_of(marker)
        self.answer(es_answer(marker), es_answer())
        self.list(ctx=self.user, marker=U2, limit=10)
        lookup, page = self.bodies()
        self.assertEqual(
            {'type': TYPE, 'query': {'term': {'id': U2}}, 'limit': 1,
             'offset': 0, 'all_projects': True,
             '_source': ['created_at', 'id', 'updated_at']}, lookup)
        after = {'bool': {'should': [
            {'bool': {'filter': [
                {'range': {'created_at': {'lt': '2017-06-01T10:00:05Z'}}}]}},
            {'bool': {'filter': [
                {'term': {'created_at': '2017-06-01T10:00:05Z'}},
                {'range': {'id': {'gt': U2}}}]}},
        ], 'minimum_should_match': 1}}
        self.assertEqual(
            {'bool': {'filter': [{'term': {'tenant_id': 'p1'}}, after],
                      'must_not': NOT_SOFT_DELETED}}, page['query'])
        self.assertEqual(DEFAULT_SORT, page['sort'])
        self.assertEqual(10, page['limit'])

    def test_marker_with_three_keys(self):
        marker = versioned_doc(U1, 'db-1', '2017-06-01T10:00:05Z')
        self.rows[U1] = row_of(marker)
        self.answer(es_answer(marker), es_answer())
        self.list(marker=U1, keys=['vm_state', 'created_at'],
                  dirs=['desc', 'asc'])
        lookup, page = self.bodies()
        self.assertEqual(['OS-EXT-STS:vm_state', 'created_at', 'id',
                          'updated_at'], lookup['_source'])
        vm, at = 'OS-EXT-STS:vm_state', '2017-06-01T10:00:05Z'
        self.assertEqual([
            {'bool': {'filter': [{'range': {vm: {'lt': 'stopped'}}}]}},
            {'bool': {'filter': [{'term': {vm: 'stopped'}},
                                 {'range': {'created_at': {'gt': at}}}]}},
            {'bool': {'filter': [{'term': {vm: 'stopped'}},
                                 {'term': {'created_at': at}},
                                 {'range': {'id': {'gt': U1}}}]}},
        ], page['query']['bool']['filter'][0]['bool']['should'])

    def test_limit_zero_checks_the_marker_only(self):
        self.serve(api_doc(U2, 'web-2', '2017-06-01T10:00:05Z'))
        result, _ = self.list(marker=U2, limit=0)
        self.assertEqual([], list(result))
        self.assertEqual(1, len(self.bodies()))
        self.assertEqual([], self.cell_reads)

    def test_through_keystone_and_the_catalog(self):
        self.answer(es_answer())
        self.list()
        self.assertTrue(self.keystone.called_once)
        sent = [r for r in self.requests.request_history
                if r.url == SEARCH_URL][0]
        self.assertEqual('POST', sent.method)
        self.assertEqual('a-token', sent.headers['X-Auth-Token'])
        self.assertEqual('application/json', sent.headers['Content-Type'])
        # [nova_ext_searchlight]timeout unset: the Selector's own limit.
        self.assertEqual(5.0, sent.timeout)

    def test_endpoint_override_and_timeout(self):
        self.flags(group=sl_conf.GROUP, timeout=2.5,
                   endpoint_override='http://sl.override:9393')
        url = 'http://sl.override:9393/v1/search'
        self.requests.post(url, json=es_answer())
        self.driver.get_instance_objects_sorted(
            self.admin, {'deleted': False}, 5, None, [], ['uuid'], ['asc'])
        self.assertEqual(2.5, self.requests.last_request.timeout)
        self.assertEqual(url, self.requests.last_request.url)


class TestPage(SearchlightTestCase):
    """Searchlight's order, the cells' records."""

    def test_cells_records_in_searchlight_order(self):
        docs = [api_doc(U3, 'web-3', '2017-06-01T10:00:09Z',
                        **{'OS-EXT-STS:task_state': 'rebooting'}),
                versioned_doc(U1, 'db-1', '2017-06-01T10:00:05Z')]
        self.serve(*docs)
        # What the documents say beyond the order is not used.
        self.rows[U3].update(task_state=None, host='compute-9',
                             metadata=[{'key': 'role', 'value': 'db'}])
        filters = {'deleted': False, 'project_id': 'p1', 'ip': 'x'}
        attrs = NOVA_ATTRS + ['fault', 'tags']
        result, down = self.list(filters=filters, attrs=attrs)
        self.assertEqual([], down)
        self.assertIsInstance(result, objects.InstanceList)
        self.assertEqual([U3, U1], [i.uuid for i in result])
        web, db = result
        self.assertEqual(('web-3', None, 'compute-9', {'role': 'db'}),
                         (web.display_name, web.task_state, web.host,
                          web.metadata))
        self.assertEqual(('db-1', 'stopped'), (db.display_name, db.vm_state))
        # One read: Nova's filters, the page's uuids in Searchlight's
        # order, the attributes exactly as Nova asked, Nova's time limit.
        self.assertEqual([(self.admin, filters, [U3, U1], attrs, 5.0)],
                         self.cell_reads)
        for inst in result:
            self.assertEqual(set(), inst.obj_what_changed())
            self.assertIs(self.admin, inst._context)
            for attr in NOVA_ATTRS + ['tags']:
                self.assertIn(attr, inst)
            # As in Nova's get_instance_objects_sorted: joined, not set.
            self.assertNotIn('fault', inst)

    def test_what_nova_api_always_asks_for_is_served(self):
        self.serve(api_doc(U1, 'a', '2017-06-01T10:00:05Z'))
        result, _ = self.list()
        self.assertEqual([U1], [i.uuid for i in result])
        self.assertEqual([], list(result[0].security_groups))

    def test_behind_no_partial_page(self):
        docs = [api_doc(U3, 'c', '2017-06-01T10:00:09Z'),
                api_doc(U2, 'b', '2017-06-01T10:00:07Z'),
                api_doc(U1, 'a', '2017-06-01T10:00:05Z')]
        later = datetime.datetime(2017, 6, 1, 10, 0, 6)
        cases = [
            ('no cell has it as the filters ask', None),
            ('row updated', dict(updated_at=later)),
            ('created_at is', dict(created_at=later)),
        ]
        for reason, changes in cases:
            with self.subTest(reason):
                self.serve(*docs)
                if changes is None:
                    del self.rows[U1]
                else:
                    self.rows[U1].update(changes)
                e = self.assertRaises(list_base.Unservable, self.list)
                self.assertIn('searchlight is behind for %s: %s'
                              % (U1, reason), str(e))

    def test_sort_values_are_checked_too(self):
        # Within the document's second, only the sort values tell.
        doc = api_doc(U1, 'a', '2017-06-01T10:00:05Z')
        self.serve(doc)
        self.rows[U1]['vm_state'] = 'stopped'
        self.list(keys=['uuid'], dirs=['asc'])
        self.assertRaises(list_base.Unservable, self.list,
                          keys=['vm_state'], dirs=['asc'])

    def test_times_compare_to_the_second(self):
        doc = api_doc(U1, 'a', '2017-06-01T10:00:05Z',
                      updated_at='2017-06-01T10:00:08.000000')
        for updated, served in (
                (datetime.datetime(2017, 6, 1, 10, 0, 8, 999999), True),
                (datetime.datetime(2017, 6, 1, 10, 0, 2), True),
                (None, True),
                (datetime.datetime(2017, 6, 1, 10, 0, 9), False)):
            with self.subTest(updated=updated):
                self.serve(doc)
                # A row never updated is as its document was created.
                self.rows[U1]['updated_at'] = updated
                if served:
                    self.assertEqual([U1], [i.uuid for i in self.list()[0]])
                else:
                    self.assertRaises(list_base.Unservable, self.list)

    def test_documents_without_a_usable_time(self):
        for value in (None, 'yesterday', 5):
            with self.subTest(value=value):
                doc = api_doc(U1, 'a', '2017-06-01T10:00:05Z')
                self.serve(doc)
                if value is None:
                    del doc['updated_at']
                else:
                    doc['updated_at'] = value
                self.answer(es_answer(doc))
                e = self.assertRaises(list_base.Unservable, self.list)
                self.assertIn('searchlight is behind for %s' % U1, str(e))

    def test_repeated_or_missing_ids(self):
        doc = api_doc(U1, 'a', '2017-06-01T10:00:05Z')
        for answer in (es_answer(doc, doc), es_answer({'name': 'x'})):
            self.answer(answer)
            self.assertRaises(list_base.Unservable, self.list)


class TestCellRecords(base.TestCase):
    """How the page's uuids are read from their cells (with fakes)."""

    def setUp(self):
        super().setUp()
        objects.register_all()
        self.ctx = nova_context.RequestContext('u1', 'p1', is_admin=False)
        self.cells = {uuid: objects.CellMapping(
            uuid=uuid, name=uuid[-1], database_connection='db' + uuid[-1],
            transport_url='none:///') for uuid in (CELL1, CELL2)}
        self.mappings = self.useFixture(fixtures.MockPatchObject(
            objects.InstanceMappingList, 'get_by_instance_uuids')).mock
        self.query = self.useFixture(fixtures.MockPatchObject(
            searchlight.main_db_api, 'instance_get_all_by_filters_sort')).mock
        self.scatter = self.useFixture(fixtures.MockPatchObject(
            nova_context, 'scatter_gather_cells',
            side_effect=self.fake_scatter)).mock

    def fake_scatter(self, ctx, cells, timeout, fn):
        return {cell.uuid: self.answers.get(cell.uuid) or fn(ctx)
                for cell in cells}

    def map(self, **cells):
        self.mappings.return_value = [
            objects.InstanceMapping(
                instance_uuid=uuid,
                cell_mapping=self.cells[cell] if cell else None)
            for uuid, cell in cells.items()]

    def test_one_query_per_cell_holding_the_page(self):
        self.map(**{U3: CELL2, U1: CELL1, U2: CELL2})
        self.answers = {CELL1: [{'uuid': U1, 'n': 1},
                                # A copy left by a cross-cell move.
                                {'uuid': U3, 'n': 'stale'}],
                        CELL2: [{'uuid': U3, 'n': 3}]}
        filters = {'deleted': False, 'uuid': [U1, U3]}
        rows = CELL_RECORDS(self.ctx, filters, [U3, U1, U2],
                            ['metadata', 'flavor', 'fault'], 4.0)
        self.assertEqual({U1: {'uuid': U1, 'n': 1},
                          U3: {'uuid': U3, 'n': 3}}, rows)
        self.mappings.assert_called_once_with(self.ctx, [U3, U1, U2])
        self.scatter.assert_called_once_with(
            self.ctx, [self.cells[CELL1], self.cells[CELL2]], 4.0,
            mock.ANY)
        # The query Nova's list runs, narrowed to the page.
        self.answers = {}
        self.query.return_value = []
        CELL_RECORDS(self.ctx, filters, [U3, U1, U2], ['metadata', 'fault'],
                     4.0)
        self.query.assert_called_with(
            self.ctx, {'deleted': False, 'uuid': [U3, U1]},
            columns_to_join=['metadata', 'fault'])
        self.assertEqual({'deleted': False, 'uuid': [U1, U3]}, filters)

    def test_build_requests_are_novas(self):
        self.map(**{U1: CELL1, U2: None})
        e = self.assertRaises(list_base.Unservable, CELL_RECORDS, self.ctx,
                              {}, [U1, U2], [], 4.0)
        self.assertIn('%s is a build request' % U2, str(e))

    def test_a_cell_that_fails_is_novas(self):
        self.map(**{U1: CELL1})
        for answer in (nova_context.did_not_respond_sentinel,
                       nova_exception.NovaException('db gone')):
            with self.subTest(answer=answer):
                self.answers = {CELL1: answer}
                self.assertRaises(list_base.Unservable, CELL_RECORDS,
                                  self.ctx, {}, [U1], [], 4.0)

    def test_cell_filters(self):
        self.assertEqual(
            {'deleted': False, 'uuid': [U3, U1]},
            searchlight.cell_filters({'deleted': False}, [U3, U1]))
        self.assertEqual(
            {'uuid': [U1]}, searchlight.cell_filters({'uuid': U1}, [U3, U1]))
        self.assertEqual(
            {'uuid': []}, searchlight.cell_filters({'uuid': []}, [U1]))


class TestMarker(SearchlightTestCase):

    def test_unknown_marker(self):
        # Nova's own lookup, before Searchlight is asked.
        e = self.assertRaises(nova_exception.MarkerNotFound, self.list,
                              marker=U3)
        self.assertIn(U3, str(e))
        self.assertEqual([], self.bodies())

    def test_marker_nova_knows_but_searchlight_not(self):
        # Deleted (Searchlight dropped it) or not yet indexed: Nova's.
        self.rows[U3] = row_of(api_doc(U3, 'c', '2017-06-01T10:00:05Z'))
        self.answer(es_answer())
        e = self.assertRaises(list_base.Unservable, self.list, marker=U3)
        self.assertIn('searchlight is behind for %s' % U3, str(e))

    def test_marker_document_behind_its_row(self):
        doc = api_doc(U1, 'a', '2017-06-01T10:00:05Z')
        for changes in (dict(updated_at=datetime.datetime(2017, 6, 2)),
                        dict(vm_state='stopped')):
            with self.subTest(changes=changes):
                since = len(self.requests.request_history)
                self.serve(doc)
                self.rows[U1].update(changes)
                self.assertRaises(list_base.Unservable, self.list, marker=U1,
                                  keys=['vm_state'], dirs=['asc'])
                self.assertEqual(1, len(self.bodies(since)))

    def test_marker_lacking_a_sort_value(self):
        doc = api_doc(U1, 'a', '2017-06-01T10:00:05Z')
        self.rows[U1] = row_of(doc)
        del doc['OS-EXT-STS:vm_state']
        for vm_state, reason in (('active', 'behind for %s' % U1),
                                 (None, 'lacks a sort value')):
            with self.subTest(vm_state=vm_state):
                self.rows[U1]['vm_state'] = vm_state
                self.answer(es_answer(doc))
                e = self.assertRaises(list_base.Unservable, self.list,
                                      marker=U1, keys=['vm_state'],
                                      dirs=['asc'])
                self.assertIn(reason, str(e))


class TestUnservable(SearchlightTestCase):
    """Handed to Nova before Searchlight is asked anything."""

    def assertUnservable(self, reason, **kwargs):
        e = self.assertRaises(list_base.Unservable, self.list, **kwargs)
        self.assertIn(reason, str(e))
        self.assertEqual([], self.requests.request_history)

    def test_filters(self):
        cases = [
            ({}, 'deleted instances'),
            ({'deleted': True}, 'deleted instances'),
            ({'deleted': False, 'hidden': True}, 'hidden'),
            ({'deleted': False, 'changes-since': '2017-06-01'},
             'changes-since'),
            ({'deleted': False, 'display_name': 'web'},
             'display_name (Nova matches it as a regular expression)'),
            ({'deleted': False, 'availability_zone': 'nova'},
             'availability_zone (Nova matches'),
            ({'deleted': False, 'metadata': {'role': 'web'}}, 'metadata'),
            ({'deleted': False, 'tags': ['blue']}, 'tags (the plugin'),
            ({'deleted': False, 'not-tags-any': ['blue']}, 'not-tags-any'),
            ({'deleted': False, 'task_state': ['rebooting']}, 'task_state'),
            ({'deleted': False, 'host': 'compute-1'}, 'host'),
            ({'deleted': False, 'instance_type_id': 1}, 'instance_type_id'),
            ({'deleted': False, 'locked': False}, 'locked'),
            ({'deleted': False, 'cleaned': True}, 'cleaned'),
            ({'deleted': False, 'uuid': U1.upper()}, 'case-sensitively'),
            ({'deleted': False, 'project_id': ['p1', 'P2']},
             'case-sensitively'),
            ({'deleted': False, 'image_ref': ''}, 'image_ref'),
            ({'deleted': False, 'user_id': None}, 'user_id'),
        ]
        for filters, reason in cases:
            with self.subTest(filters=filters):
                self.assertUnservable(reason, filters=filters)

    def test_sorts(self):
        cases = [
            (dict(keys=['display_name'], dirs=['asc']), 'display_name'),
            (dict(keys=['updated_at'], dirs=['asc']), 'updated_at'),
            (dict(keys=['host', 'uuid'], dirs=['asc', 'asc']), 'host'),
            (dict(keys=None, dirs=None), 'cell-local ids'),
            (dict(keys=['vm_state', 'uuid'], dirs=['asc']), 'do not pair'),
            (dict(keys=['uuid'], dirs=['up']), 'unknown sort direction'),
        ]
        for kwargs, reason in cases:
            with self.subTest(**kwargs):
                self.assertUnservable(reason, **kwargs)

    def test_unlimited(self):
        self.assertUnservable('unlimited', limit=None)

    def test_down_cells(self):
        self.down.return_value = ['cell1-uuid']
        self.assertUnservable('cells cell1-uuid are down')

    def test_created_at_with_sub_second_cells(self):
        self.whole_seconds.return_value = False
        self.assertUnservable('sub-second')
        self.answer(es_answer())
        self.list(keys=['uuid'], dirs=['asc'])

    def test_whole_seconds_cells(self):
        self.useFixture(fixtures.MockPatchObject(nova_context, 'load_cells'))

        def cells(*urls):
            return [objects.CellMapping(uuid=U1, database_connection=u)
                    for u in urls]
        for urls, expected in (
                (['mysql+pymysql://n:p@db/nova_cell0',
                  'mysql+pymysql://n:p@db/nova_cell1'], True),
                (['mysql+pymysql://n:p@db/nova_cell0',
                  'postgresql://n:p@db/nova_cell1'], False),
                (['sqlite:///cell1.sqlite'], False),
                (['mysql+pymysql://n:p@db/nova_cell0',
                  'c0000000-0000-4000-8000-000000000001'], False)):
            with mock.patch.object(nova_context, 'CELLS', cells(*urls)):
                self.assertEqual(expected, WHOLE_SECONDS_CELLS())


class TestUnavailable(SearchlightTestCase):
    """Searchlight, or Keystone, cannot answer: Nova answers, latched."""

    def assertUnavailable(self, reason):
        e = self.assertRaises(list_base.Unavailable, self.list)
        self.assertIn(reason, str(e))

    def test_unreachable(self):
        self.answer({'exc': requests.exceptions.ConnectionError('refused')})
        self.assertUnavailable('ConnectFailure')

    def test_timeouts(self):
        for exc in (requests.exceptions.ConnectTimeout,
                    requests.exceptions.ReadTimeout):
            with self.subTest(exc=exc):
                self.answer({'exc': exc('slow')})
                self.assertUnavailable('ConnectTimeout')

    def test_http_errors(self):
        for status in (500, 503, 401, 403, 400):
            with self.subTest(status=status):
                self.answer({'status_code': status, 'json': {
                    'error': {'message': 'no', 'code': status}}})
                self.assertUnavailable('HTTP %d' % status)

    def test_keystone_refuses(self):
        self.requests.post(AUTH_URL + '/auth/tokens', status_code=401,
                           json={'error': {'code': 401}})
        self.assertUnavailable('Unauthorized')

    def test_keystone_unreachable(self):
        self.requests.post(AUTH_URL + '/auth/tokens',
                           exc=requests.exceptions.ConnectionError)
        self.assertUnavailable('ConnectFailure')

    def test_no_search_service_in_the_catalog(self):
        token = ks_fixture.V3Token()
        token.add_service('compute').add_standard_endpoints(
            public='http://nova.example')
        self.requests.post(AUTH_URL + '/auth/tokens', json=token,
                           headers={'X-Subject-Token': 'a-token'})
        self.assertUnavailable('EndpointNotFound')

    def test_no_credentials(self):
        self.flags(group=sl_conf.GROUP, auth_type=None)
        self.assertUnavailable('auth_type is not set')

    def test_partial_or_malformed_answers(self):
        cases = [
            (es_answer(timed_out=True), 'timed out'),
            (es_answer(_shards={'total': 5, 'successful': 3, 'failed': 2}),
             '2 Elasticsearch shards failed'),
            ({'hits': {'total': 0}}, 'not an Elasticsearch answer'),
            ({'status_code': 200, 'text': '<html>proxy</html>'}, 'no JSON'),
            ({'status_code': 200, 'json': [1, 2]}, 'no JSON'),
        ]
        for answer, reason in cases:
            with self.subTest(reason=reason):
                self.answer(answer)
                self.assertUnavailable(reason)

    def test_more_hits_than_asked(self):
        docs = [api_doc(u, u, '2017-06-01T10:00:05Z') for u in (U1, U2)]
        self.answer(es_answer(*docs))
        e = self.assertRaises(list_base.Unavailable, self.list, limit=1)
        self.assertIn('2 hits for a limit of 1', str(e))

    def test_recovers_when_keystone_comes_back(self):
        self.requests.post(AUTH_URL + '/auth/tokens',
                           exc=requests.exceptions.ConnectionError)
        self.assertUnavailable('ConnectFailure')
        self.requests.post(AUTH_URL + '/auth/tokens', json=self.token,
                           headers={'X-Subject-Token': 'a-token'})
        self.answer(es_answer())
        self.assertEqual([], list(self.list()[0]))


class TestLoading(base.TestCase):

    def test_client_missing_is_a_clear_error(self):
        with mock.patch.dict(sys.modules, {'searchlightclient': None}):
            e = self.assertRaises(exception.NovaExtError,
                                  searchlight.SearchlightDriver)
        self.assertIsInstance(e, searchlight.ClientMissing)
        self.assertIn('pip install --no-deps python-searchlightclient',
                      str(e))

    def test_entry_point(self):
        root = os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
        setup = configparser.ConfigParser()
        setup.read(os.path.join(root, 'setup.cfg'))
        drivers = dict(
            line.split(' = ') for line in
            setup['entry_points']['nova_ext.instance_list.drivers']
            .strip().splitlines())
        module, cls = drivers['searchlight'].split(':')
        self.assertIs(searchlight.SearchlightDriver,
                      getattr(importlib.import_module(module), cls))
        self.assertEqual('searchlight', searchlight.SearchlightDriver.name)

    def test_request_shape_is_the_clients(self):
        # What the real client would send: every key of our bodies is one
        # it passes through to POST /v1/search.
        from searchlightclient.v1 import search as sl_search
        manager = sl_search.SearchManager(mock.Mock())
        manager.client.post.return_value.json.return_value = {'hits': {}}
        body = {'type': TYPE, 'query': {'match_all': {}}, 'limit': 1,
                'offset': 0, 'all_projects': True, 'sort': [],
                '_source': ['id']}
        manager.search(**copy.deepcopy(body))
        manager.client.post.assert_called_once_with('/v1/search', json=body)


class TestOverlayAgrees(base.TestCase):
    """When a marked instance's document shows its row."""

    CREATED = datetime.datetime(2026, 11, 25, 10, 0, 0, 400000)

    def row(self, **values):
        row = {'uuid': 'u1', 'project_id': 'p', 'user_id': 'u',
               'vm_state': 'active', 'image_ref': 'img', 'deleted': 0,
               'created_at': self.CREATED,
               'updated_at': self.CREATED + datetime.timedelta(seconds=2)}
        row.update(values)
        return row

    def document(self, **values):
        doc = {'id': 'u1', 'tenant_id': 'p', 'user_id': 'u',
               'OS-EXT-STS:vm_state': 'active',
               'image': {'id': 'img', 'links': []},
               'created_at': '2026-11-25T10:00:00Z',
               'updated_at': '2026-11-25T10:00:02Z'}
        doc.update(values)
        return doc

    def test_same(self):
        self.assertTrue(overlay.agrees(self.document(), self.row()))

    def test_each_field_differs(self):
        for doc, row in (
                (self.document(), self.row(vm_state='stopped')),
                (self.document(), self.row(project_id='q')),
                (self.document(), self.row(user_id='v')),
                (self.document(), self.row(image_ref='')),
                (self.document(created_at='2026-11-25T10:00:01Z'),
                 self.row()),
                (self.document(updated_at='2026-11-25T10:00:01Z'),
                 self.row()),
                (self.document(updated_at=None), self.row()),
                (None, self.row())):
            self.assertFalse(overlay.agrees(doc, row), (doc, row))

    def test_volume_backed(self):
        self.assertTrue(overlay.agrees(self.document(image=''),
                                       self.row(image_ref='')))

    def test_never_updated(self):
        self.assertTrue(overlay.agrees(
            self.document(updated_at='2026-11-25T10:00:00Z'),
            self.row(updated_at=None)))

    def test_deleted_or_gone(self):
        self.assertTrue(overlay.agrees(None, self.row(deleted=1)))
        self.assertTrue(overlay.agrees(None, None))
        self.assertFalse(overlay.agrees(self.document(), self.row(deleted=1)))
        self.assertFalse(overlay.agrees(self.document(), None))
