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
"""The searchlight driver answers GET /servers as Nova does, or not at all.

A real multi-cell Nova; only Searchlight's HTTP endpoint is mocked
(requests_mock), reached through keystoneauth's ``admin_token`` plugin and
``endpoint_override``. It answers from documents made of the servers the
test created, as Searchlight's bulk sync makes them from the compute API,
filtered and sorted by a small stand-in for the Elasticsearch query
language the driver sends. Every request is made twice, through the driver
and through Nova's own path, and both answers must be the same bytes.
"""

import operator
import time

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from requests_mock.contrib import fixture as rm_fixture

from nova_ext.conf import searchlight as sl_conf
from nova_ext.index.marks import pending
from nova_ext.index.marks import process
from nova_ext.instance_list import serving
from nova_ext.seams import api as api_entry_point
from nova_ext.seams import db_writes
from nova_ext.tests.functional import base
from nova_ext.tests.functional import fixtures as ext_fixtures

SEARCHLIGHT = 'http://searchlight.test:9393'
TOKEN = 'searchlight-test-token'
_RANGE = {'gt': operator.gt, 'lt': operator.lt}


def document(server):
    """A server as Searchlight's serialize_nova_server indexed it."""
    doc = {key: value for key, value in server.items()
           if key not in ('links', 'progress')}
    doc.update(status=server['status'].lower(),
               created_at=server['created'], updated_at=server['updated'])
    return doc


def _field(doc, path):
    for key in path.split('.'):
        doc = doc.get(key) if isinstance(doc, dict) else None
    return doc


def _matches(doc, clause):
    """The part of Elasticsearch's query DSL the driver uses."""
    (kind, arg), = clause.items()
    if kind == 'match_all':
        return True
    if kind in ('term', 'terms', 'range'):
        (path, value), = arg.items()
        found = _field(doc, path)
        if kind == 'term':
            return found == value
        if kind == 'terms':
            return found in value
        return found is not None and all(
            _RANGE[op](found, bound) for op, bound in value.items())
    if kind == 'bool':
        should = arg.get('should', [])
        return (all(_matches(doc, c) for c in arg.get('filter', [])) and
                not any(_matches(doc, c) for c in arg.get('must_not', [])) and
                sum(_matches(doc, c) for c in should) >=
                arg.get('minimum_should_match', 1 if should else 0))
    raise AssertionError('the Searchlight stand-in does not know %s' % kind)


def es_answer(docs, body):
    """Searchlight's answer to a /v1/search ``body`` over ``docs``."""
    hits = [d for d in docs if _matches(d, body['query'])]
    for sort in reversed(body.get('sort', [])):
        (path, how), = sort.items()
        hits.sort(key=lambda d: _field(d, path),
                  reverse=how['order'] == 'desc')
    hits = hits[body['offset']:body['offset'] + body['limit']]
    return {'took': 1, 'timed_out': False,
            '_shards': {'total': 1, 'successful': 1, 'failed': 0},
            'hits': {'total': len(hits), 'max_score': None, 'hits': [
                {'_index': 'searchlight', '_type': body['type'],
                 '_id': d['id'], '_score': None,
                 '_source': {f: d[f] for f in body['_source'] if f in d}}
                for d in hits]}}


class _SearchlightTestCase(base.NovaExtTestCase):

    NOVA_EXT_OPTIONS = {
        'nova_ext_instance_list': {'driver': 'searchlight'},
        sl_conf.GROUP: {'auth_type': 'admin_token', 'token': TOKEN,
                        'endpoint': SEARCHLIGHT,
                        'endpoint_override': SEARCHLIGHT},
    }

    def _setup_services(self):
        # The plugin's options, as keystoneauth registers them on loading.
        cfg.CONF.register_opts(
            ks_loading.get_auth_plugin_conf_options('admin_token'),
            group=sl_conf.GROUP)
        super()._setup_services()

    def setUp(self):
        super().setUp()
        self.servers = [
            self._create_server(name='sl-%d' % n, host=host, networks='none')
            for n, host in enumerate(['compute1-1', 'compute2-1'] * 2)]
        self._stop_server(self.servers[1])
        self.docs = self.index()
        self.searchlight = self.useFixture(rm_fixture.Fixture(real_http=True))
        self.searchlight.post(SEARCHLIGHT + '/v1/search',
                              json=lambda request, _: es_answer(
                                  self.docs, request.json()))

    def index(self):
        """Documents of every server now, as a bulk sync writes them."""
        return [document(self.admin_api.get_server(s['id']))
                for s in self.servers]

    @property
    def selector(self):
        return serving.selector()

    def assertSameAnswer(self, api, uri, counted):
        """GET ``uri`` through the driver and through Nova; compare.

        :param counted: what the selector must have counted the driver's
            request as (``served`` or ``unservable``).
        :returns: the driver's response.
        """
        before = self.selector.stats.snapshot()
        got = api.api_request(uri)
        after = self.selector.stats.snapshot()
        with api_entry_point.stock_instance_list():
            want = api.api_request(uri)
        self.assertEqual(want.json(), got.json(), uri)
        self.assertEqual(want.text, got.text, uri)
        changed = {key for key in self.selector.stats.FIELDS
                   if after[key] != before[key]}
        self.assertEqual(({counted}, before[counted] + 1),
                         (changed, after[counted]), '%s: %s' % (uri, after))
        return got


class TestSearchlightDriver(_SearchlightTestCase):

    def test_pages_as_nova(self):
        ids = sorted(s['id'] for s in self.servers)
        got = self.assertSameAnswer(
            self.api, 'servers/detail?sort_key=uuid&sort_dir=asc', 'served')
        self.assertEqual(ids, [s['id'] for s in got.json()['servers']])
        sent = [r for r in self.searchlight.request_history
                if r.url.startswith(SEARCHLIGHT)][-1]
        self.assertEqual(TOKEN, sent.headers['X-Auth-Token'])
        self.assertEqual(
            {'filter': [{'term': {'tenant_id': self.api.project_id}}],
             'must_not': [{'term': {'OS-EXT-STS:vm_state': 'soft-delete'}}]},
            sent.json()['query']['bool'])
        for api, uri in (
                (self.api, 'servers?status=ACTIVE&sort_key=uuid'
                           '&sort_dir=desc'),
                (self.admin_api, 'servers/detail?all_tenants=1&'
                                 'sort_key=vm_state&sort_dir=desc'),
                (self.api, 'servers/detail?limit=2&sort_key=vm_state&'
                           'sort_dir=asc&sort_key=uuid&sort_dir=desc'),
                (self.api, 'servers/detail?limit=2&sort_key=uuid&'
                           'sort_dir=asc&marker=%s' % ids[1])):
            self.assertSameAnswer(api, uri, 'served')
        # Nova's default order, created_at, is Nova's on these sub-second
        # (SQLite) cells.
        self.assertSameAnswer(self.api, 'servers/detail', 'unservable')
        self.assertIn('sub-second', self.selector.stats.last_reason)

    def test_searchlight_behind(self):
        uri = 'servers/detail?sort_key=uuid&sort_dir=asc'
        # Rows change after the documents were written (a second later, as
        # documents keep whole seconds): Nova answers.
        time.sleep(1.1)
        self._start_server(self.servers[1])
        self.assertSameAnswer(self.api, uri, 'unservable')
        self.assertIn('searchlight is behind for %s' % self.servers[1]['id'],
                      self.selector.stats.last_reason)
        self.docs = self.index()
        self.assertSameAnswer(self.api, uri, 'served')
        # A deleted server whose document is still there: no longer in the
        # cell as the filters ask.
        self._delete_server(self.servers[2])
        self.assertSameAnswer(self.api, uri, 'unservable')
        self.assertIn('searchlight is behind for %s' % self.servers[2]['id'],
                      self.selector.stats.last_reason)


class TestSearchlightChanges(_SearchlightTestCase):
    """Changes Searchlight has not indexed yet: capture's marks.

    A change can put a server on a page Searchlight leaves it off; the
    page's own documents say nothing of it.
    """

    NOVA_EXT_OPTIONS = dict(_SearchlightTestCase.NOVA_EXT_OPTIONS,
                            nova_ext_index={'capture': True})
    URI = 'servers/detail?sort_key=uuid&sort_dir=asc'

    def _setup_services(self):
        self.index_db = self.useFixture(ext_fixtures.IndexFixture(self))
        super()._setup_services()

    def setUp(self):
        super().setUp()
        self.addCleanup(db_writes.detach)
        self.assertTrue(db_writes.attached())

    def releases_recorded(self):
        # The ends of Nova's transactions are recorded up to
        # capture_release_delay later; until then, their marks stay.
        self.assertTrue(process.get_batcher(cfg.CONF).flush(10))

    def assertBehind(self, api, uri, server):
        self.assertSameAnswer(api, uri, 'unservable')
        self.assertIn('searchlight is behind for %s' % server['id'],
                      self.selector.stats.last_reason)

    def test_new_server(self):
        # The documents show every server as it is: the marks their
        # creation left are done with, and removed.
        self.releases_recorded()
        self.assertSameAnswer(self.api, self.URI, 'served')
        self.assertEqual(0, pending.count(self.index_db.engine))
        new = self._create_server(name='sl-new', host='compute2-1',
                                  networks='none')
        self.servers.append(new)
        self.assertBehind(self.api, self.URI, new)
        self.docs = self.index()
        self.releases_recorded()
        self.assertSameAnswer(self.api, self.URI, 'served')
        self.assertEqual(0, pending.count(self.index_db.engine))

    def test_state_now_matches(self):
        uri = 'servers?status=SHUTOFF&sort_key=uuid&sort_dir=asc'
        self.assertSameAnswer(self.api, uri, 'served')
        self._stop_server(self.servers[0])
        # Searchlight still has it ACTIVE: it would leave it off the page.
        self.assertBehind(self.api, uri, self.servers[0])
        # A list it is not in, whatever Searchlight thinks of it.
        self.assertSameAnswer(
            self.api, 'servers?status=ERROR&sort_key=uuid&sort_dir=asc',
            'served')
        self.docs = self.index()
        self.assertSameAnswer(self.api, uri, 'served')

    def test_deleted_server(self):
        gone = self.servers.pop(2)
        self._delete_server(gone)
        # Its document is still there, on the page.
        self.assertBehind(self.api, self.URI, gone)
        self.docs = self.index()
        self.releases_recorded()
        self.assertSameAnswer(self.api, self.URI, 'served')
        self.assertEqual(0, pending.count(self.index_db.engine))

    def test_too_many_changes(self):
        self.assertSameAnswer(self.api, self.URI, 'served')
        self.flags(catch_up_limit=1, group='nova_ext_index')
        for server in self.servers[:2]:
            self.api.post_server_action(server['id'], {'lock': {}})
        self.assertSameAnswer(self.api, self.URI, 'unservable')
        self.assertIn('more than 1 changes', self.selector.stats.last_reason)
