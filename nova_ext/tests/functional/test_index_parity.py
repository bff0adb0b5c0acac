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
"""The index driver answers GET /servers exactly as Nova does.

Every request is made twice against the same cloud, once through the index
and once through Nova's own path, and the two responses must have the same
status and the same bytes. Each index answer must also have been served by
the index (not handed back to Nova), or the comparison would prove nothing.
"""

import collections
import gc
import re
import time
from unittest import mock
import urllib.parse

from nova.api.openstack import api_version_request
from nova.api.validation import validators as nova_validators
from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova.db.main import models as nova_models
from nova import objects
import sqlalchemy as sa

from nova_ext import conf as ext_conf
from nova_ext.index.marks import holders
from nova_ext.index.marks import witness
from nova_ext.index.repair import sync
from nova_ext.index import schema
from nova_ext.instance_list import page_cache
from nova_ext.instance_list.render import detail_bodies
from nova_ext.instance_list.render import detailed
from nova_ext.instance_list.render import page_bodies
from nova_ext.instance_list.render import render_cache
from nova_ext.instance_list.render import request_specs
from nova_ext.instance_list import serving
from nova_ext.seams import api as api_entry_point
from nova_ext.seams.internals import heap
from nova_ext.seams.internals import orm as nova_orm
from nova_ext.seams.internals import schema_validator
from nova_ext.tests.functional import answers
from nova_ext.tests.functional import base
from nova_ext.tests.functional import fixtures as ext_fixtures
from nova_ext.tests.functional import population


#: The options of the test classes that have nova_ext render the pages.
FAST_OPTIONS = {
    'nova_ext_instance_list': {'driver': 'index', 'fast_render': True}}


class IndexTestCase(base.NovaExtTestCase):

    NOVA_EXT_OPTIONS = {'nova_ext_instance_list': {'driver': 'index'}}
    #: Whether nova_ext renders what the index serves (fast_render); then
    #: every served answer must have been, but those with IP filters and
    #: those showing build requests (see build_request_ids).
    FAST_RENDER = False
    #: Whether every list the tests send must be served. The harness runs
    #: the test and every service in one process, on a machine running
    #: other suites too: a cell's probe can wait there longer than
    #: query_timeout's 5 s for its turn, and the page goes to Nova. Such
    #: classes give query_timeout 60 s; the fallback tests hold
    #: query_timeout itself. Under eventlet, Nova's own list (each
    #: comparison's, its statements compiled anew for each sort) holds the
    #: process for seconds on a loaded machine, and with it the green
    #: threads that beat for the holders and read their beats: a list
    #: that finds a holder silent for two heartbeat intervals goes to Nova
    #: (witness.py). Such classes give those intervals 5 s; the holders'
    #: tests hold them themselves. Where a list still goes to Nova for a
    #: silence after the process was seen held up for longer (Stalls),
    #: assertSameAnswer compares it once more when the holders vouched.
    EVERY_LIST_SERVED = False

    def setUp(self):
        super().setUp()
        # Nova's harness checks every answer against Nova's response
        # schemas (error); these tests compare every list answer byte for
        # byte with Nova's own, which that check adds nothing to, and it
        # takes a quarter of each comparison's time.
        self.flags(response_validation='ignore', group='api')
        if self.EVERY_LIST_SERVED:
            self.flags(query_timeout=60, group='nova_ext_index')
            self.flags(holder_heartbeat_interval=5.0,
                       group='nova_ext_index')

    def _setup_services(self):
        #: Servers that are build requests, which Nova's view renders.
        self.build_request_ids = set()
        self.index = self.useFixture(ext_fixtures.IndexFixture(self))
        self.stalls = self.useFixture(ext_fixtures.Stalls())
        self.nova_500s = []
        self.null_sort_differences = []
        super()._setup_services()

    def sync_index(self):
        ctx = nova_context.get_admin_context()
        for cell in sync.cells(ctx):
            sync.sync_cell(ctx, ext_conf.CONF, cell)

    def wait_for_vouches(self, since, timeout=30):
        """Until every other holder vouched, by a read begun after ``since``.

        A holder row made again (the index file made anew) counts as
        silent until its next heartbeat; lists are Nova's until then. A
        read from before the index was mended may show this process's
        holder under a name it no longer has (made anew once its row was
        found gone): silent then, until the next read.
        """
        seen = witness.get_witness(ext_conf.CONF)
        deadline = time.monotonic() + timeout
        while True:
            silent = seen.silent(own=holders.get_lease(ext_conf.CONF).name)
            if silent == [] and seen.last_read >= since:
                return
            self.assertLess(time.monotonic(), deadline, silent)
            time.sleep(0.1)

    def _other_holders(self):
        """The names of the holders' rows, but this process's own."""
        table = schema.HOLDERS
        with self.index.engine.connect() as conn:
            names = set(conn.execute(sa.select(table.c.holder)).scalars())
        return names - {holders.get_lease(ext_conf.CONF).name}

    def null_columns(self, columns):
        """Columns that are NULL for some live instance."""
        table = nova_models.Instance.__table__
        found = set()
        with self.index.engine.connect() as conn:
            for column in columns:
                if conn.execute(sa.select(sa.func.count()).where(
                        table.c[column].is_(None),
                        table.c.deleted == 0)).scalar():
                    found.add(column)
        return found

    @property
    def selector(self):
        return serving.selector()

    def _get(self, api, uri, headers=None):
        if headers is None:
            return api.api_request(uri, check_response_status=[])
        # The client adds the microversion to the headers it is given.
        return api.api_request(uri, check_response_status=[],
                               headers=dict(headers))

    def assertSameAnswer(self, api, uri, served=None, nova_500=False,
                         null_sort=False, headers=None):
        """GET ``uri`` through the index and through Nova; compare.

        Where the two differ only in the ``updated`` Nova renders as the
        time of the request, each the time of its own, they are the same
        (answers.py).

        :param served: whether the index must have answered; by default,
            exactly when the answer is a 200. Queries that Nova answers
            before it lists anything (an unknown flavor, an IP no port has)
            pass False.
        :param nova_500: the caller knows Nova may fail this request with a
            500 (see NOVA_500_SORTS); where it does, the index must answer
            200 instead.
        :param null_sort: the request sorts on a column that is NULL for
            some servers, where Nova's order is undefined (see
            NOVA_500_SORTS); a different page is recorded, not failed.
        :param headers: the request's headers besides the client's own.
        :returns: the index's answer (an answers.Answer).
        """
        args = _get_args(api, uri, headers)
        context = '%s as %s (%s)' % (uri, api.auth_user, api.microversion)
        got, before, after = self._answers_compared(args, context,
                                                    nova_500, null_sort)
        if self._starved(served, got, before, after):
            # Nova's answer, as it must be while the index cannot tell
            # whether every holder recorded its changes. Once they vouched
            # again, the same request shows whether the index serves it.
            # A holder released meanwhile did not vouch: it was silent for
            # holder_timeout, far longer than a stall explains.
            present = self._other_holders()
            self.wait_for_vouches(time.monotonic())
            released = present - self._other_holders()
            self.assertFalse(released, 'holders silent until released as '
                             'dead, not held up by a stall: %s; %s'
                             % (sorted(released), context))
            got, before, after = self._answers_compared(args, context,
                                                        nova_500, null_sort)
        self.assertServed(served, before, after, got, context)
        return got

    def _answers_compared(self, args, context, nova_500, null_sort):
        before = self.selector.stats.snapshot()
        got = answers.get(self._get, *args)
        after = self.selector.stats.snapshot()
        with api_entry_point.stock_instance_list():
            want = answers.get(self._get, *args)
        want_now, got_now = answers.same_moment(want, got)
        if nova_500 and want.status_code == 500:
            self.assertEqual(200, got.status_code, context)
            self.nova_500s.append(args[1])
        elif (null_sort and want.status_code == got.status_code == 200 and
                want_now != got_now):
            self.null_sort_differences.append(args[1])
        elif want_now != got_now:
            difference = ext_fixtures.first_difference(_json(want),
                                                       _json(got))
            self.fail('index and Nova differ on %s: status %s vs %s; %s'
                      % (context, got.status_code, want.status_code,
                         difference))
        return got, before, after

    def _starved(self, served, got, before, after):
        """Whether a list went to Nova for a stall of this process.

        For the holders' silence, after the harness saw this process held
        up (``ext_fixtures.Stalls``) for longer than a holder beating on
        time leaves to spare: its vouch is seen at most an interval and
        two reads of the holders table after the one before.
        """
        if served is False or (served is None and got.status_code != 200):
            return False
        if after['unservable'] == before['unservable'] or (
                'holders of marks' not in (after['last_reason'] or '')):
            return False
        conf = ext_conf.CONF
        interval = conf.nova_ext_index.holder_heartbeat_interval
        spare = holders.window(conf) - interval * (
            1 + 2.0 / witness.READS_PER_INTERVAL)
        held = self.stalls.since(time.monotonic() - holders.window(conf))
        return held >= spare

    def assertServed(self, served, before, after, got, context):
        if served is None:
            served = got.status_code == 200
        self.assertEqual(before['served'] + int(served), after['served'],
                         'served by the index: %s expected %s; %s'
                         % (context, served, after))
        if self.FAST_RENDER:
            query = urllib.parse.parse_qs(
                urllib.parse.urlsplit(context.split(' ')[0]).query)
            shown = {s['id'] for s in got.json().get('servers', [])} \
                if got.status_code == 200 else set()
            rendered = (served and not {'ip', 'ip6'} & set(query) and
                        not shown & self.build_request_ids)
            self.assertEqual(
                before['rendered'] + int(rendered), after['rendered'],
                'rendered by nova_ext: %s expected %s; %s'
                % (context, rendered, after))

    def walk(self, api, uri, nova_500=False, null_sort=False):
        """Compare every page of a paged listing; returns the servers."""
        pages, servers = 0, []
        while uri:
            got = self.assertSameAnswer(api, uri, nova_500=nova_500,
                                        null_sort=null_sort)
            pages += 1
            body = got.json()
            servers.extend(body['servers'])
            links = body.get('servers_links') or []
            nxt = [link['href'] for link in links if link['rel'] == 'next']
            uri = _relative(api, nxt[0]) if nxt else None
            self.assertLess(pages, 50, 'runaway paging at %s' % uri)
        return servers


def _get_args(api, uri, headers):
    """``_get``'s arguments: its own override takes no headers."""
    return (api, uri) if headers is None else (api, uri, headers)


def _json(response):
    try:
        return response.json()
    except ValueError:
        return response.text


def _relative(api, href):
    base_path = urllib.parse.urlsplit(api.base_url).path.rstrip('/')
    parts = urllib.parse.urlsplit(href)
    path = parts.path[len(base_path):].lstrip('/')
    return path + ('?' + parts.query if parts.query else '')


#: Sorts for which Nova 34 answers 500 on this population, at least: its
#: merge of the cells compares a NULL of one cell with a value (or a NULL)
#: of another in Python (TypeError in RecordSortContext.compare_records);
#: cell0's ERROR server has no host, the others do. Other keys with NULLs
#: (launched_at, task_state, key_name, ...) fail or not depending on which
#: cells the merge happens to compare. The index sorts in one database and
#: answers 200, in the order Nova gives with a single cell. Where Nova does
#: answer such a sort, its order depends on which cell holds the NULLs, so
#: pages may differ; they hold the same servers unless a marker's value is
#: NULL, where paging skips rows on both paths (oslo.db's paginate_query).
NOVA_500_SORTS = ('sort_key=host&sort_dir=asc', 'sort_key=host&sort_dir=desc')


#: A sort key of each type of Nova's schema, with NULLs and without:
#: datetimes, strings, integers, booleans, IP addresses (INET on
#: PostgreSQL) and the locked_by enum (declaration order on PostgreSQL).
TYPED_SORT_KEYS = (
    'created_at', 'launched_at', 'display_name', 'hostname', 'host',
    'task_state', 'uuid', 'locked', 'auto_disk_config', 'power_state',
    'progress', 'instance_type_id', 'access_ip_v4', 'access_ip_v6',
    'display_description', 'locked_by')

#: The requests compared at every microversion where nova_ext renders.
#: A page without details shows each server's id, name and links at every
#: microversion: check_every_microversion compares it at four of them.
RENDERED_MICROVERSION_REQUESTS = (
    ('admin_api', 'servers/detail?all_tenants=1'),
    ('api', 'servers/detail?limit=4'))


class TestIndexParity(IndexTestCase):

    #: The callers and paths every filter is compared for.
    FILTER_CALLERS = ('admin_api', 'api', 'other')
    FILTER_PATHS = ('servers', 'servers/detail')
    #: Every sort key of Nova's schema that a server of the population
    #: sets (the query is the index's own: every key is compared here).
    SORT_KEYS = (
        'created_at', 'display_name', 'host', 'hostname', 'launched_at',
        'locked', 'node', 'power_state', 'task_state', 'updated_at', 'uuid',
        'vm_state', 'availability_zone', 'instance_type_id', 'project_id',
        'user_id', 'key_name', 'config_drive', 'access_ip_v4', 'image_ref',
        'progress', 'terminated_at', 'launch_index', 'root_device_name',
        'display_description', 'kernel_id', 'ramdisk_id', 'auto_disk_config',
        'access_ip_v6', 'locked_by')
    #: The requests compared at every microversion, as (caller, uri).
    #: Nova renders these pages from Instance objects made of index rows:
    #: what a microversion shows of them, the admin's detailed page shows.
    #: Where nova_ext renders (TestFastRenderParity,
    #: TestRenderCacheParity), a project's pages are compared too.
    MICROVERSION_REQUESTS = (('admin_api', 'servers/detail?all_tenants=1'),)

    EVERY_LIST_SERVED = True

    def setUp(self):
        super().setUp()
        self.servers = population.build(self)
        self.other = population.other_project_api(self)
        self.sync_index()

    def _filters(self):
        s = self.servers
        image = s['active1']['image']['id']
        return [
            '', 'limit=3', 'all_tenants=1', 'all_tenants=1&deleted=true',
            'project_id=%s' % population.OTHER_PROJECT,
            'all_tenants=1&tenant_id=%s' % population.OTHER_PROJECT,
            'name=srv-a', 'name=%5Esrv-(locked|other)2%24', 'name=nomatch',
            'status=ACTIVE', 'status=SHUTOFF', 'status=ERROR',
            'status=VERIFY_RESIZE', 'status=SHELVED_OFFLOADED',
            'status=DELETED', 'all_tenants=1&status=DELETED',
            'vm_state=active', 'task_state=', 'host=compute1-1',
            'node=compute2', 'all_tenants=1&host=compute2-1',
            'flavor=1', 'image=%s' % image,
            'tags=t1', 'tags=t1,t2', 'tags-any=t1,t2', 'not-tags=t1',
            # A server with both tags is two rows of Nova's join, ahead of
            # another server within the limit.
            'all_tenants=1&tags-any=t1,t2&limit=2&sort_key=created_at&'
            'sort_dir=asc',
            'not-tags-any=t1,t2', 'all_tenants=1&tags=t2',
            'locked=true', 'locked=false', 'availability_zone=nova',
            'changes-since=2000-01-01T00:00:00Z',
            'changes-before=2100-01-01T00:00:00Z',
            'all_tenants=1&changes-since=2000-01-01T00:00:00Z',
            'ip=10.0.0', 'ip6=fe80', 'ip=192.168.1', 'ip=192.168.1.3',
            'ip6=fd37', 'user_id=fake', 'key_name=x',
            'hostname=srv', 'reservation_id=r-x', 'launch_index=0',
            'soft_deleted=true', 'uuid=%s' % s['active1']['id'],
        ]

    #: Whether check_every_microversion runs (test_index_backends: the
    #: backend changes the query, not the rendering).
    EVERY_MICROVERSION = True

    def test_filters_sorts_pages_and_microversions(self):
        # The population is read, never changed, by the three: built once
        # for them, as building it takes as long as one of them.
        self.check_filters_by_role()
        self.check_sorts_markers_and_pages()
        if self.EVERY_MICROVERSION:
            self.check_every_microversion()

    def check_filters_by_role(self):
        for api in [getattr(self, name) for name in self.FILTER_CALLERS]:
            for path in self.FILTER_PATHS:
                for query in self._filters():
                    query, served = (query if isinstance(query, tuple)
                                     else (query, None))
                    self.assertSameAnswer(
                        api, path + ('?' + query if query else ''),
                        served=served)

    def check_sorts_markers_and_pages(self):
        keys = self.SORT_KEYS
        nullable = self.null_columns(keys)
        for key in keys:
            for direction in ('asc', 'desc'):
                uri = ('servers/detail?all_tenants=1&limit=3&sort_key=%s'
                       '&sort_dir=%s' % (key, direction))
                self.walk(self.admin_api, uri, nova_500=True,
                          null_sort=key in nullable)
        # If Nova stops failing these, the index's answers to them can be
        # compared too: drop them from NOVA_500_SORTS.
        for sort in NOVA_500_SORTS:
            self.assertTrue(any(sort in uri for uri in self.nova_500s),
                            '%s: %s' % (sort, self.nova_500s))
        self.walk(self.admin_api, 'servers?all_tenants=1&deleted=true&'
                  'limit=2&sort_key=vm_state&sort_dir=asc&'
                  'sort_key=display_name&sort_dir=desc')
        self.walk(self.api, 'servers/detail?limit=2')
        self.walk(self.other, 'servers/detail?limit=1&sort_key=created_at')
        self._markers_and_errors()

    def check_every_microversion(self):
        top = api_version_request.max_api_version()
        self.assertEqual(2, top.ver_major)
        for minor in range(1, top.ver_minor + 1):
            version = '2.%d' % minor
            self.admin_api.microversion = version
            self.api.microversion = version
            for caller, uri in self.MICROVERSION_REQUESTS:
                self.assertSameAnswer(getattr(self, caller), uri)
        for version in ('2.1', '2.47', '2.69', 'latest'):
            self.admin_api.microversion = version
            self.api.microversion = version
            self.assertSameAnswer(self.admin_api, 'servers/detail?'
                                  'deleted=true&all_tenants=1')
            self.assertSameAnswer(self.api, 'servers')

    def _markers_and_errors(self):
        s = self.servers
        for label in ('active1', 'locked2', 'error0', 'deleted1',
                      'other2', 'shelved2'):
            self.assertSameAnswer(
                self.admin_api, 'servers/detail?all_tenants=1&limit=2&'
                'marker=%s' % s[label]['id'])
            self.assertSameAnswer(
                self.api, 'servers?limit=2&marker=%s' % s[label]['id'])
        # Unknown marker: the index hands it to Nova, which gives its 400.
        got = self.assertSameAnswer(
            self.admin_api, 'servers?marker=00000000-0000-0000-0000-'
            '000000000000', served=False)
        self.assertEqual(400, got.status_code)
        # Rejected before any listing: identical by construction, checked
        # anyway, since nova_ext sits in the same pipeline.
        for uri in ('servers?sort_key=nope', 'servers?limit=-1',
                    'servers?changes-since=yesterday',
                    'servers?sort_key=display_name&sort_dir=sideways',
                    'servers?flavor=does-not-exist'):
            self.assertSameAnswer(self.admin_api, uri, served=False)


class TestFastRenderParity(TestIndexParity):
    """The same comparisons, with nova_ext rendering the index's pages."""

    NOVA_EXT_OPTIONS = FAST_OPTIONS
    FAST_RENDER = True
    # A member of another project has the project member's roles: what
    # nova_ext renders for it is compared in the walks of paged lists, and
    # every filter for it where Nova renders (TestIndexParity).
    FILTER_CALLERS = ('admin_api', 'api')
    MICROVERSION_REQUESTS = RENDERED_MICROVERSION_REQUESTS
    # A detailed page is listed by the query TestIndexParity compares for
    # every key; the narrowed list without details is walked below.
    SORT_KEYS = TYPED_SORT_KEYS

    def test_a_list_without_details_reads_narrow_rows(self):
        # Nova's view of GET /servers reads each server's uuid and name:
        # the list query reads no joins and few columns, and the answer
        # is still Nova's, sorted by any key and paged.
        for uri in ('servers?all_tenants=1',
                    'servers?all_tenants=1&sort_key=display_name&limit=3',
                    'servers?sort_key=hostname&sort_dir=asc'):
            narrowed = nova_orm.narrowed_queries
            got = self.assertSameAnswer(self.admin_api, uri, served=True)
            self.assertTrue(got.json()['servers'])
            self.assertGreaterEqual(nova_orm.narrowed_queries - narrowed, 1,
                                    uri)
        # The detailed list without the render cache reads full rows.
        narrowed = nova_orm.narrowed_queries
        self.assertSameAnswer(self.admin_api, 'servers/detail?all_tenants=1',
                              served=True)
        self.assertEqual(narrowed, nova_orm.narrowed_queries)

    def test_the_query_is_checked_with_classes_made_once(self):
        # nova_ext's run of Nova's controller checks the query with the
        # validator classes it made once (schema_validator); the answers,
        # refusals included, are Nova's.
        ours = nova_validators._SchemaValidator
        self.assertIsNot(schema_validator._NOVAS, ours)
        self.assertTrue(issubclass(ours, schema_validator._NOVAS))
        ours._classes.clear()
        for uri, status in (('servers?all_tenants=1&limit=2', 200),
                            ('servers?limit=-1', 400),
                            ('servers/detail?changes-since=yesterday', 400),
                            ('servers?sort_key=no-such-key', 400)):
            got = self.assertSameAnswer(self.admin_api, uri)
            self.assertEqual(status, got.status_code, uri)
        # One class, of the kind Nova checks a query of 2.1 and later
        # with (additionalProperties as its schema says): Nova's own
        # checks of the same requests, compared after nova_ext's, made
        # theirs as Nova does.
        self.assertEqual([False], list(ours._classes))

    def test_a_content_type_nova_refuses(self):
        # Nova's wsgi.Resource answers 415 to a request whose Content-Type
        # it does not read, a GET's too, before its controller lists.
        for content_type, status in (
                ('application/xml', 415),
                ('application/x-www-form-urlencoded', 415),
                ('text/plain', 200)):
            # Served by nova_ext exactly when it is a 200.
            got = self.assertSameAnswer(
                self.admin_api, 'servers?all_tenants=1',
                headers={'Content-Type': content_type})
            self.assertEqual(status, got.status_code, content_type)


CACHED_OPTIONS = {
    'nova_ext_instance_list': {'driver': 'index', 'fast_render': True,
                               'render_cache_size': 100000,
                               'page_cache_size': 100,
                               'detail_body_cache_size': 100}}


class _RenderCacheMixin(object):
    """Every answer twice: the second from the caches, also Nova's.

    The second request finds its documents in the render cache and, unless
    the index changed in between, its rows in the page cache.
    """

    def assertSameAnswer(self, api, uri, **kwargs):
        self._get(*_get_args(api, uri, kwargs.get('headers')))
        return super().assertSameAnswer(api, uri, **kwargs)


class TestRenderCacheParity(_RenderCacheMixin, TestIndexParity):
    """Fast rendering with the render cache: still Nova's answers."""

    NOVA_EXT_OPTIONS = CACHED_OPTIONS
    FAST_RENDER = True
    MICROVERSION_REQUESTS = RENDERED_MICROVERSION_REQUESTS
    # A list without details is read by TestFastRenderParity's narrowed
    # query, which compares it with every filter; its documents' keys are
    # compared in test_lists_come_from_the_cache, and its kept bodies with
    # every filter in test_filters_without_details_from_the_kept_bodies.
    FILTER_PATHS = ('servers/detail',)
    FILTER_CALLERS = TestFastRenderParity.FILTER_CALLERS
    # The cache's list query is TestFastRenderParity's narrowed one.
    SORT_KEYS = TYPED_SORT_KEYS

    #: Lists without details, and the microversions they are asked at:
    #: before and after Nova's view loads the request specs (2.96).
    LISTS = ('servers?all_tenants=1',
             'servers?all_tenants=1&sort_key=display_name&limit=3',
             'servers?deleted=true&all_tenants=1')
    LIST_VERSIONS = ('2.1', '2.96', 'latest')

    def _counted_answer(self, bodies, uri):
        """The admin's answer to ``uri``, checked Nova's, and its counts.

        ``(bodies kept given, documents looked up in the render cache,
        bodies patched, the answer)``.
        """
        documents = render_cache.cache(ext_conf.CONF)
        hits = bodies.hits
        looked = documents.hits + documents.misses
        patched = self.selector.stats.snapshot()['bodies_patched']
        got = TestIndexParity.assertSameAnswer(self, self.admin_api, uri,
                                               served=True)
        return (bodies.hits - hits,
                documents.hits + documents.misses - looked,
                self.selector.stats.snapshot()['bodies_patched'] - patched,
                got)

    def test_documents_come_from_the_cache(self):
        cache = render_cache.cache(ext_conf.CONF)
        uri = 'servers/detail?all_tenants=1'
        first = self.assertSameAnswer(self.admin_api, uri)
        self.assertTrue(first.json()['servers'])
        hits, narrowed = cache.hits, nova_orm.narrowed_queries
        driver = self.selector.driver
        # Listed again, not taken from the page cache, and rendered, not
        # a body kept whole (test_detailed_bodies_come_whole).
        self.flags(page_cache_size=0, group='nova_ext_instance_list')
        self.flags(detail_body_cache_size=0, group='nova_ext_instance_list')
        with mock.patch.object(driver, 'versions',
                               wraps=driver.versions) as versions:
            self.assertSameAnswer(self.admin_api, uri)
        self.assertGreaterEqual(cache.hits - hits,
                                len(first.json()['servers']))
        # The rows' versions, which key the documents, were read by the
        # list query itself.
        self.assertEqual(0, versions.call_count)
        # Nova's list query was read narrow, for both requests through the
        # index (in batches); if Nova's query changes shape, this fails.
        self.assertGreaterEqual(nova_orm.narrowed_queries - narrowed, 2)

    def test_detailed_bodies_come_whole(self):
        # An unchanged page is the text of the body kept for its reads: no
        # document looked up. A change renders the page again, then its
        # body is kept; each answer is Nova's.
        bodies = detail_bodies.cache(ext_conf.CONF)
        documents = render_cache.cache(ext_conf.CONF)
        every = 'servers/detail?all_tenants=1'
        # From 2.96 Nova's view reads the request specs: a page without
        # the server whose spec Nova builds (grouped2).
        last = every + '&sort_key=display_name&sort_dir=desc&limit=3'
        for version, uri in (('2.1', every), ('2.95', every),
                             ('latest', last)):
            self.admin_api.microversion = version
            # The documents cached, then the body kept.
            self._get(self.admin_api, uri)
            self._get(self.admin_api, uri)
            for _ in range(2):
                hits, looked_up = bodies.hits, documents.hits
                counted = self.selector.stats.snapshot()['bodies_kept']
                TestIndexParity.assertSameAnswer(self, self.admin_api, uri,
                                                 served=True)
                self.assertEqual(hits + 1, bodies.hits, version)
                self.assertEqual(looked_up, documents.hits, version)
                self.assertEqual(
                    counted + 1,
                    self.selector.stats.snapshot()['bodies_kept'], version)
            renamed = self.servers['active1']['id']
            self.admin_api.put_server(
                renamed, {'server': {'name': 'whole-' + version}})
            self.sync_index()
            hits, size = bodies.hits, len(bodies)
            counted = self.selector.stats.snapshot()['bodies_kept']
            got = TestIndexParity.assertSameAnswer(
                self, self.admin_api, uri, served=True)
            self.assertEqual(hits, bodies.hits, version)
            # Rendered: not counted as a kept body.
            self.assertEqual(counted,
                             self.selector.stats.snapshot()['bodies_kept'],
                             version)
            self.assertIn('whole-' + version,
                          [s['name'] for s in got.json()['servers']])
            # Rendered once the renamed server's row was read in full, the
            # page's body is kept: the next request is its text.
            self.assertEqual(size + 1, len(bodies), version)
            hits = bodies.hits
            TestIndexParity.assertSameAnswer(self, self.admin_api, uri,
                                             served=True)
            self.assertEqual(hits + 1, bodies.hits, version)
        # Nova builds grouped2's spec, reading its group again for the
        # hints it shows: the group deleted, its hint is gone, the spec's
        # text unchanged, and the body kept with it is not the answer.
        for _ in range(2):
            self._get(self.admin_api, every)
        hits = bodies.hits
        TestIndexParity.assertSameAnswer(self, self.admin_api, every,
                                         served=True)
        self.assertEqual(hits + 1, bodies.hits)
        grouped = self.servers['grouped2']['id']

        def hints(answer):
            return [s.get('scheduler_hints') for s in answer.json()['servers']
                    if s['id'] == grouped][0]
        self.assertIn('group', hints(self._get(self.admin_api, every)))
        for group in self.admin_api.api_get(
                '/os-server-groups?all_projects=True').body['server_groups']:
            self.admin_api.api_delete('/os-server-groups/%s' % group['id'])
        hits = bodies.hits
        got = TestIndexParity.assertSameAnswer(self, self.admin_api, every,
                                               served=True)
        self.assertEqual(hits, bodies.hits)
        self.assertNotIn('group', hints(got))
        # Another caller's page, its own body: a member's project only.
        self.api.microversion = '2.95'
        uri = 'servers/detail'
        self._get(self.api, uri)
        self._get(self.api, uri)
        hits = bodies.hits
        TestIndexParity.assertSameAnswer(self, self.api, uri, served=True)
        self.assertEqual(hits + 1, bodies.hits)

    def test_changed_servers_alone_are_rendered_again_in_detail(self):
        # After writes, GET /servers/detail is the body given before with
        # the documents of the changed servers alone rendered again: the
        # others are not looked up. The answer is Nova's, byte for byte,
        # right after; then it is the body kept.
        bodies = detail_bodies.cache(ext_conf.CONF)
        every = 'servers/detail?all_tenants=1'
        # From 2.96 Nova's view reads the request specs: a page without
        # the server whose spec Nova builds (grouped2).
        last = every + '&sort_key=display_name&sort_dir=desc&limit=4'

        def answer(uri):
            return self._counted_answer(bodies, uri)

        for version, uri in (('2.1', every), ('latest', last)):
            self.admin_api.microversion = version
            self._get(self.admin_api, uri)
            self._get(self.admin_api, uri)
            kept, looked, patched, got = answer(uri)
            self.assertEqual((1, 0, 0), (kept, looked, patched), version)
            shown = [s['id'] for s in got.json()['servers']]
            self.assertGreater(len(shown), 2)
            renamed, tagged = shown[1], shown[-1]
            self.admin_api.put_server(renamed, {'server': {
                'name': got.json()['servers'][1]['name'] + '-' + version}})
            self.admin_api.post_server_metadata(tagged, {'color': version})
            self.sync_index()
            kept, looked, patched, got = answer(uri)
            # Each changed server's document is looked up once, with its
            # row read in full: its row was written since the body.
            self.assertEqual((0, 2, 1), (kept, looked, patched), version)
            servers = {s['id']: s for s in got.json()['servers']}
            self.assertTrue(servers[renamed]['name'].endswith(version))
            self.assertEqual(version, servers[tagged]['metadata']['color'])
            self.assertEqual((1, 0, 0), answer(uri)[:3], version)
        # Nova builds grouped2's spec, reading its group again for the
        # hints it shows: the group deleted, its hint is gone. Its document
        # alone is rendered again, with the spec the page's view is given:
        # its row unchanged, looked up with the row read for the page
        # first, then with the row read in full.
        grouped = self.servers['grouped2']['id']
        for _ in range(2):
            self._get(self.admin_api, every)
        self.assertEqual((1, 0, 0), answer(every)[:3])
        for group in self.admin_api.api_get(
                '/os-server-groups?all_projects=True').body['server_groups']:
            self.admin_api.api_delete('/os-server-groups/%s' % group['id'])
        kept, looked, patched, got = answer(every)
        self.assertEqual((0, 2, 1), (kept, looked, patched))
        hints = [s['scheduler_hints'] for s in got.json()['servers']
                 if s['id'] == grouped][0]
        self.assertNotIn('group', hints)

    def test_a_row_written_again_while_its_page_renders(self):
        # Between the page's read and the read in full of its changed
        # server, Nova writes that server again: the page shows it as read
        # in full, as Nova then does, but neither its document nor the
        # page's body is kept under the version the page read.
        bodies = detail_bodies.cache(ext_conf.CONF)
        documents = render_cache.cache(ext_conf.CONF)
        uri = 'servers/detail?all_tenants=1'
        for _ in range(2):
            self._get(self.admin_api, uri)
        uuid = self.servers['active1']['id']
        self.admin_api.put_server(uuid, {'server': {'name': 'read-first'}})
        self.sync_index()
        real, calls = detailed._full_rows, []

        def written_again(driver, listing, uuids):
            calls.append(sorted(uuids))
            ctx = nova_context.get_admin_context()
            cell = objects.InstanceMapping.get_by_instance_uuid(
                ctx, uuid).cell_mapping
            table = nova_models.Instance.__table__
            with nova_context.target_cell(ctx, cell) as cctx:
                with main_db_api.get_context_manager(cctx).writer.using(
                        cctx) as session:
                    session.execute(sa.update(table).where(
                        table.c.uuid == uuid).values(
                        display_name='read-later'))
            self.sync_index()
            return real(driver, listing, uuids)
        kept, cached = len(bodies), len(documents)
        with mock.patch.object(detailed, '_full_rows',
                               side_effect=written_again):
            got = TestIndexParity.assertSameAnswer(
                self, self.admin_api, uri, served=True)
        self.assertEqual([[uuid]], calls)
        self.assertEqual('read-later', [
            s['name'] for s in got.json()['servers'] if s['id'] == uuid][0])
        self.assertEqual((kept, cached), (len(bodies), len(documents)))
        # The next page reads the later version: its document and its
        # body are kept, then the body is the answer.
        TestIndexParity.assertSameAnswer(self, self.admin_api, uri,
                                         served=True)
        self.assertEqual((kept + 1, cached + 1),
                         (len(bodies), len(documents)))
        hits = bodies.hits
        TestIndexParity.assertSameAnswer(self, self.admin_api, uri,
                                         served=True)
        self.assertEqual(hits + 1, bodies.hits)

    def test_pages_come_from_the_page_cache(self):
        for uri in ('servers/detail?all_tenants=1',
                    'servers?all_tenants=1&limit=2&sort_key=display_name',
                    'servers/detail?all_tenants=1&deleted=true'):
            # The page is kept as this first request lists it.
            page_cache.reset()
            pages = page_cache.cache(ext_conf.CONF)
            self._get(self.admin_api, uri)
            rows = self._kept_rows(pages)
            hits, narrowed = pages.hits, nova_orm.narrowed_queries
            self.assertSameAnswer(self.admin_api, uri, served=True)
            # nova_ext's answers were the page listed by the first request,
            # not queried again, and Nova's.
            self.assertEqual(narrowed, nova_orm.narrowed_queries, uri)
            self.assertGreater(pages.hits, hits, uri)
            # Handed out as they are, the kept rows were read by the
            # renderer, not changed.
            self.assertEqual(rows, self._kept_rows(pages), uri)
        # A change to a listed row, from the API: the next page is brought
        # up to date (the changed row read again), and shows it.
        renamed = self.servers['active1']['id']
        self.admin_api.put_server(renamed, {'server': {'name': 'zzz'}})
        self.sync_index()
        narrowed = nova_orm.narrowed_queries
        got = self.assertSameAnswer(self.admin_api,
                                    'servers/detail?all_tenants=1',
                                    served=True)
        self.assertGreater(nova_orm.narrowed_queries, narrowed)
        self.assertIn('zzz', [s['name'] for s in got.json()['servers']])
        # The next page of a paged list, by its marker, from the cache too.
        uri = 'servers?all_tenants=1&limit=2&sort_key=display_name'
        marker = self._get(self.admin_api, uri).json()['servers'][-1]['id']
        uri += '&marker=' + marker
        self._get(self.admin_api, uri)
        hits, narrowed = pages.hits, nova_orm.narrowed_queries
        self.assertSameAnswer(self.admin_api, uri, served=True)
        self.assertEqual(narrowed, nova_orm.narrowed_queries)
        self.assertGreater(pages.hits, hits)

    @staticmethod
    def _kept_rows(pages):
        """A copy of the rows of every page ``pages`` keeps, by key."""
        return {key: [dict(row) for row in value]
                for key, (_, value) in pages._values.items()
                if isinstance(value, page_cache.Rows)}

    def test_a_page_rendered_again_keeps_the_page_cache(self):
        # The renamed server's document is rendered again, after the page
        # read its volumes: the second pass shows those, rather than read
        # them again as a page of its own that no later request asks for,
        # which would push the pages out of the cache at every write.
        pages = page_cache.cache(ext_conf.CONF)
        uri = 'servers/detail?all_tenants=1'
        self.assertSameAnswer(self.admin_api, uri, served=True)
        kept = set(pages._values)
        renamed = self.servers['active1']['id']
        self.admin_api.put_server(renamed, {'server': {'name': 'again'}})
        self.sync_index()
        before = collections.Counter(pages.outcomes)
        got = self._get(self.admin_api, uri)
        # The rows and the volumes of the page, each brought up to date.
        self.assertEqual({'brought': 2}, dict(pages.outcomes - before))
        self.assertEqual(kept, set(pages._values))
        self.assertIn('again', [s['name'] for s in got.json()['servers']])
        self.assertSameAnswer(self.admin_api, uri, served=True)

    def test_gc_freeze_after_the_first_rendered_list(self):
        # Frozen, the cached documents and pages answer as before, and
        # changes still show.
        heap.reset()
        self.addCleanup(heap.reset)
        self.flags(gc_freeze=True, group='nova_ext_instance_list')
        detail = 'servers/detail?all_tenants=1'
        listed = 'servers?all_tenants=1'
        self.assertSameAnswer(self.admin_api, detail, served=True)
        frozen = heap.frozen()
        self.assertGreater(frozen, 0)
        self.assertLessEqual(gc.get_freeze_count(), frozen)
        self.admin_api.put_server(self.servers['active1']['id'],
                                  {'server': {'name': 'frozen'}})
        self.sync_index()
        for uri in (detail, listed):
            got = self._get(self.admin_api, uri)
            self.assertIn('frozen', [s['name'] for s in got.json()['servers']])
            self.assertSameAnswer(self.admin_api, uri, served=True)
        # Frozen once: no more than then, but for the objects freed since.
        self.assertIs(frozen, heap.frozen())
        self.assertLessEqual(gc.get_freeze_count(), frozen)

    def _cache_outcome(self, uri):
        """How the page cache answered ``uri``, then compared with Nova's.

        Of a list without details: the cache keeps its rows only.
        """
        pages = page_cache.cache(ext_conf.CONF)
        before = collections.Counter(pages.outcomes)
        self._get(self.admin_api, uri)
        outcome = dict(pages.outcomes - before)
        self.assertSameAnswer(self.admin_api, uri, served=True)
        return outcome

    def test_kept_pages_are_brought_up_to_date(self):
        by_name = 'servers?all_tenants=1&name=%5Ezz'
        full = 'servers?all_tenants=1&limit=2'
        whole = 'servers?all_tenants=1&deleted=true'
        uris = (by_name, full, whole)
        for uri in uris:
            self._get(self.admin_api, uri)
            self.assertEqual({'kept': 1}, self._cache_outcome(uri))
        newest = self._get(self.admin_api, full).json()['servers']
        older = [self.servers[label] for label in ('active1', 'stopped1')
                 if self.servers[label]['id'] not in
                 [n['id'] for n in newest]]

        def rename(server, name):
            self.admin_api.put_server(server['id'],
                                      {'server': {'name': name}})
            self.sync_index()
        brought, listed = {'brought': 1}, {'listed': 1}
        for server, name, outcomes in (
                # Into a page without a limit: where it sorts, only a list
                # tells.
                (older[0], 'zz1', [listed, brought, brought]),
                # On the page still, in its place: read again alone. On a
                # full page it was not on: after its last row, read again
                # alone too.
                (older[0], 'zz2', [brought, brought, brought]),
                # Out of a page without a limit: it leaves it.
                (older[0], 'srv-renamed', [brought, brought, brought]),
                # On a full page, renamed: in its place.
                (newest[0], 'zz3', [listed, brought, brought])):
            rename(server, name)
            self.assertEqual(outcomes,
                             [self._cache_outcome(uri) for uri in uris], name)
        # A server off a full page, changed: one query reads it with the
        # page's last row, which the database orders.
        rename(older[0], 'zz4')
        driver = self.selector.driver
        with mock.patch.object(driver, 'list_rows',
                               wraps=driver.list_rows) as rows:
            self.assertEqual(brought, self._cache_outcome(full))
        self.assertEqual(1, rows.call_count)
        self.assertEqual({older[0]['id'], newest[-1]['id']},
                         set(rows.call_args[0][1]['uuid']))
        # Out of a full page: the next row comes in, which a list tells.
        limited = 'servers?all_tenants=1&name=%5Ezz&limit=1'
        self._get(self.admin_api, limited)
        rename(newest[0], 'srv-renamed2')
        self.assertEqual(listed, self._cache_outcome(limited))
        # Before the last row of a full page (sorted by name): a list tells.
        first = ('servers?all_tenants=1&sort_key=display_name&'
                 'sort_dir=asc&limit=2')
        self._get(self.admin_api, first)
        rename(older[0], 'a0')
        self.assertEqual(listed, self._cache_outcome(first))
        # On it, with another value of its sort key: a list tells.
        rename(older[0], 'a1')
        self.assertEqual(listed, self._cache_outcome(first))
        for uri in uris:
            self.assertSameAnswer(self.admin_api, uri, served=True)

    def test_a_page_is_brought_in_one_query(self):
        # Nova's lister reads the changed rows in one batch: a second would
        # look up the last row read, then query past it.
        pages = page_cache.cache(ext_conf.CONF)
        for uri in ('servers?all_tenants=1&limit=2',
                    'servers?all_tenants=1&name=%5Esrv-'):
            shown = self._get(self.admin_api, uri).json()['servers']
            self.admin_api.put_server(shown[0]['id'],
                                      {'server': {'name': 'srv-brought'}})
            self.sync_index()
            before = collections.Counter(pages.outcomes)
            narrowed = nova_orm.narrowed_queries
            got = self._get(self.admin_api, uri).json()['servers']
            self.assertEqual(1, nova_orm.narrowed_queries - narrowed, uri)
            self.assertEqual({'brought': 1}, dict(pages.outcomes - before))
            self.assertEqual('srv-brought', got[0]['name'])
            self.assertSameAnswer(self.admin_api, uri, served=True)

    def test_a_page_none_of_whose_rows_changed_keeps_its_memo(self):
        # What was worked out from a page's rows (its body's key) holds
        # while none of them is written: written off the page, it is not
        # worked out again; on it, it is.
        # A detailed page's volumes are kept and brought beside its rows.
        for uri, module, work, brought in (
                ('servers?all_tenants=1&limit=2', page_bodies, '_shown', 1),
                ('servers/detail?all_tenants=1&limit=2', detail_bodies,
                 '_rows_part', 2)):
            # Listed, then kept: worked out for the rows kept.
            self._get(self.admin_api, uri)
            shown = self._get(self.admin_api, uri).json()['servers']
            off = next(self.servers[label] for label in ('active1',
                                                         'stopped1')
                       if self.servers[label]['id'] not in
                       [s['id'] for s in shown])
            for n, (server, worked_out) in enumerate(((off, 0),
                                                      (shown[0], 1))):
                self.admin_api.put_server(
                    server['id'], {'server': {'name': 'srv-memo%d' % n}})
                self.sync_index()
                with mock.patch.object(module, work,
                                       wraps=getattr(module, work)) as w:
                    self.assertEqual({'brought': brought},
                                     self._cache_outcome(uri))
                self.assertEqual(worked_out, w.call_count, (uri, n))

    def test_tags_any_pages_when_a_server_gains_a_tag(self):
        # Nova's tags-any query is a row per matching tag of a server: the
        # server with both tags now is two rows of it.
        uris = ('servers?all_tenants=1&tags-any=t1,t2',
                'servers?all_tenants=1&tags-any=t1,t2&limit=2&'
                'sort_key=created_at&sort_dir=asc')
        for uri in uris:
            self.assertSameAnswer(self.admin_api, uri, served=True)
        self.admin_api.api_put(
            '/servers/%s/tags/t1' % self.servers['other2']['id'], None,
            check_response_status=[201])
        self.sync_index()
        for uri in uris:
            self.assertNotEqual({'kept': 1}, self._cache_outcome(uri), uri)

    def test_lists_come_from_the_cache(self):
        # GET /servers: documents from the cache, no request spec built
        # (Nova's view of a list shows nothing of them), and a renamed
        # server shown by its new name at once.
        cache = render_cache.cache(ext_conf.CONF)
        uris = self.LISTS
        for version in self.LIST_VERSIONS:
            self.admin_api.microversion = version
            for uri in uris:
                self._get(self.admin_api, uri)
                # Rendered from the documents, not a body kept whole
                # (test_lists_come_whole_from_the_kept_bodies).
                page_bodies.reset()
                hits = cache.hits
                with mock.patch.object(
                        request_specs, 'get_by_instance_uuids',
                        wraps=request_specs.get_by_instance_uuids) as specs:
                    got = TestIndexParity.assertSameAnswer(
                        self, self.admin_api, uri, served=True)
                self.assertEqual(0, specs.call_count)
                shown = len(got.json()['servers'])
                self.assertTrue(shown)
                self.assertGreaterEqual(cache.hits - hits, shown, uri)
        # A detailed page at the same microversion does read them.
        with mock.patch.object(
                request_specs, 'get_by_instance_uuids',
                wraps=request_specs.get_by_instance_uuids) as specs:
            self.assertSameAnswer(self.admin_api,
                                  'servers/detail?all_tenants=1')
        self.assertGreater(specs.call_count, 0)
        renamed = self.servers['active1']['id']
        self.admin_api.put_server(renamed, {'server': {'name': 'renamed'}})
        self.sync_index()
        got = [self.assertSameAnswer(self.admin_api, uri, served=True)
               for uri in uris[:2]]
        self.assertIn({'id': renamed, 'name': 'renamed'},
                      [{'id': s['id'], 'name': s['name']}
                       for s in got[0].json()['servers']])

    def test_lists_come_whole_from_the_kept_bodies(self):
        # GET /servers again, the index unchanged: the body written for the
        # first answers it, no server's document looked up, and it is
        # Nova's. Every request still reads its page's rows.
        bodies = page_bodies.cache(ext_conf.CONF)
        documents = render_cache.cache(ext_conf.CONF)
        pages = page_cache.cache(ext_conf.CONF)
        uris = self.LISTS
        for version in self.LIST_VERSIONS:
            self.admin_api.microversion = version
            for uri in uris:
                self._get(self.admin_api, uri)
                hits, looked = bodies.hits, documents.hits + documents.misses
                rows = pages.hits
                counted = self.selector.stats.snapshot()['bodies_kept']
                got = self.assertSameAnswer(self.admin_api, uri, served=True)
                self.assertTrue(got.json()['servers'])
                self.assertGreater(bodies.hits, hits, uri)
                self.assertEqual(
                    counted + bodies.hits - hits,
                    self.selector.stats.snapshot()['bodies_kept'], uri)
                self.assertEqual(looked, documents.hits + documents.misses,
                                 uri)
                self.assertGreater(pages.hits, rows, uri)
        # The next page, by its marker: a body of its own, Nova's.
        first = self._get(self.admin_api, uris[1]).json()
        self.assertIn('servers_links', first)
        nxt = uris[1] + '&marker=' + first['servers'][-1]['id']
        got = self.assertSameAnswer(self.admin_api, nxt, served=True)
        self.assertNotEqual(first['servers'], got.json()['servers'])
        # A renamed server: a new version of its row, a new body, Nova's,
        # right after the change.
        renamed = self.servers['active1']['id']
        self.admin_api.put_server(renamed, {'server': {'name': 'renamed'}})
        self.sync_index()
        for uri in uris[:2]:
            got = self.assertSameAnswer(self.admin_api, uri, served=True)
        self.assertIn({'id': renamed, 'name': 'renamed'},
                      [{'id': s['id'], 'name': s['name']}
                       for s in self._get(self.admin_api,
                                          uris[0]).json()['servers']])

    def test_a_change_the_list_does_not_show_keeps_its_body(self):
        # GET /servers shows each server's uuid and name. New metadata
        # writes the server's rows into the index anew, and the next
        # request is still answered with the body kept: Nova's, right
        # after the change. A new access IP, whose stored text Nova's
        # Instance may refuse, is a new body, Nova's too.
        bodies = page_bodies.cache(ext_conf.CONF)
        documents = render_cache.cache(ext_conf.CONF)
        uri = self.LISTS[0]
        server = self.servers['active1']['id']
        instances = schema.INSTANCES

        def read_at():
            with self.index.engine.connect() as conn:
                return conn.execute(sa.select(instances.c.read_at).where(
                    instances.c.uuid == server)).scalar()

        def answer():
            hits = bodies.hits
            looked = documents.hits + documents.misses
            TestIndexParity.assertSameAnswer(self, self.admin_api, uri,
                                             served=True)
            rendered = documents.hits + documents.misses != looked
            return bodies.hits - hits, rendered

        self._get(self.admin_api, uri)
        self.assertEqual((1, False), answer())
        was = read_at()
        self.admin_api.post_server_metadata(server, {'color': 'blue'})
        self.sync_index()
        self.assertNotEqual(was, read_at())
        self.assertEqual((1, False), answer())
        self.admin_api.put_server(server, {'server': {
            'accessIPv4': '192.0.2.10'}})
        self.sync_index()
        self.assertEqual((0, True), answer())
        self.assertEqual((1, False), answer())

    def test_renamed_servers_alone_are_rendered_again(self):
        # After renames, GET /servers is the body given before with the
        # documents of the renamed servers alone rendered again: the
        # others are not looked up. The answer is Nova's, byte for byte,
        # right after; then it is the body kept.
        bodies = page_bodies.cache(ext_conf.CONF)
        uri = self.LISTS[0]
        renamed = [self.servers[label]['id']
                   for label in ('active1', 'stopped1')]

        def answer():
            return self._counted_answer(bodies, uri)

        self._get(self.admin_api, uri)
        kept, looked, patched, got = answer()
        self.assertEqual((1, 0, 0), (kept, looked, patched))
        self.assertGreater(len(got.json()['servers']), len(renamed) + 1)
        for n, server in enumerate(renamed):
            self.admin_api.put_server(server, {'server': {
                'name': 'renamed-%d' % n}})
        self.sync_index()
        kept, looked, patched, got = answer()
        self.assertEqual((0, len(renamed), 1), (kept, looked, patched))
        names = {s['id']: s['name'] for s in got.json()['servers']}
        self.assertEqual(['renamed-0', 'renamed-1'],
                         [names[server] for server in renamed])
        self.assertEqual((1, 0, 0), answer()[:3])

    def test_missed_documents_are_read_in_one_query(self):
        # The rows whose documents a page lacks are read with their joins:
        # one query of the instances, not Nova's batch after batch until
        # one comes back empty (a marker lookup and a query more).
        uri = 'servers/detail?all_tenants=1'
        self.assertSameAnswer(self.admin_api, uri, served=True)
        for label in ('active1', 'stopped1'):
            self.admin_api.put_server(self.servers[label]['id'], {
                'server': {'name': 'again-' + label}})
        self.sync_index()
        reads, full = [], []
        wrapped = detailed._full_rows

        def full_rows(driver, listing, uuids):
            full.append(sorted(uuids))
            return wrapped(driver, listing, uuids)

        def executed(conn, cursor, statement, *args):
            if full and re.search(r'\bFROM instances\b', statement):
                reads.append(statement)
        engine = self.index.engine
        sa.event.listen(engine, 'before_cursor_execute', executed)
        self.addCleanup(sa.event.remove, engine, 'before_cursor_execute',
                        executed)
        with mock.patch.object(detailed, '_full_rows', full_rows):
            got = TestIndexParity.assertSameAnswer(self, self.admin_api,
                                                   uri, served=True)
        self.assertEqual([sorted(self.servers[label]['id']
                                 for label in ('active1', 'stopped1'))],
                         full)
        self.assertEqual(1, len(reads), [read[:120] for read in reads])
        names = [s['name'] for s in got.json()['servers']]
        self.assertIn('again-active1', names)
        self.assertIn('again-stopped1', names)

    def test_filters_without_details_from_the_kept_bodies(self):
        # Every filter, as every caller: the second GET /servers is a kept
        # body, and Nova's.
        bodies = page_bodies.cache(ext_conf.CONF)
        for api in [getattr(self, name) for name in self.FILTER_CALLERS]:
            for query in self._filters():
                if isinstance(query, tuple):
                    # Nova answers these itself, before it lists.
                    continue
                uri = 'servers' + ('?' + query if query else '')
                self._get(api, uri)
                hits = bodies.hits
                before = self.selector.stats.snapshot()['rendered']
                TestIndexParity.assertSameAnswer(self, api, uri)
                if self.selector.stats.snapshot()['rendered'] == before:
                    # Nova renders it (an IP address filter, fastpath).
                    continue
                self.assertEqual(hits + 1, bodies.hits,
                                 '%s as %s' % (uri, api.auth_user))

    def test_a_kept_body_is_for_its_host_and_scheme(self):
        # Nova's links are made of the request's host and scheme: a body
        # kept for one is not another's. The scheme a proxy forwards, as
        # a deployment behind TLS termination has Nova read it.
        self.flags(enable_proxy_headers_parsing=True,
                   group='oslo_middleware')
        bodies = page_bodies.cache(ext_conf.CONF)
        uri = 'servers?all_tenants=1&limit=2'
        for headers in ({}, {'Host': 'other.example.org:8774'},
                        {'X-Forwarded-Proto': 'https'},
                        {'Host': 'other.example.org',
                         'X-Forwarded-Proto': 'https'}):
            hits = bodies.hits
            # The first request of each host and scheme is rendered, the
            # second is its kept body; each is Nova's, and served.
            for _ in range(2):
                got = TestIndexParity.assertSameAnswer(
                    self, self.admin_api, uri, served=True, headers=headers)
            self.assertEqual(hits + 1, bodies.hits, headers)
        links = [link['href'] for link in got.json()['servers_links']]
        self.assertTrue(links[0].startswith('https://other.example.org/'),
                        links)

    def test_a_server_never_updated_shows_the_time_of_each_request(self):
        # Nova shows a server without updated_at as updated at the time of
        # the request; a document kept from an earlier request would show
        # that one's time, older than the request compared (answers.py).
        uuid = self.servers['stopped1']['id']
        ctx = nova_context.get_admin_context()
        cell = objects.InstanceMapping.get_by_instance_uuid(
            ctx, uuid).cell_mapping
        table = nova_models.Instance.__table__
        with nova_context.target_cell(ctx, cell) as cctx:
            with main_db_api.get_context_manager(cctx).writer.using(cctx) as s:
                s.execute(sa.update(table).where(table.c.uuid == uuid)
                          .values(updated_at=None))
        # Nova never takes updated_at back to NULL, which the index takes
        # for an older row: its book forgets the value, as for a server it
        # has never read.
        book = schema.INSTANCES
        with self.index.engine.begin() as conn:
            conn.execute(sa.update(book).where(book.c.uuid == uuid)
                         .values(source_updated_at=None))
        self.sync_index()
        uri = 'servers/detail?all_tenants=1'
        first = self.assertSameAnswer(self.admin_api, uri)
        time.sleep(max(0, int(first.ended) + 1 - time.time()))
        second = self.assertSameAnswer(self.admin_api, uri)
        [shown] = [s['updated'] for s in second.json()['servers']
                   if s['id'] == uuid]
        self.assertGreaterEqual(shown, time.strftime(
            '%Y-%m-%dT%H:%M:%SZ', time.gmtime(int(second.started))))


class TestIndexFollowsNotifications(IndexTestCase):
    """No sync: the in-process consumer alone keeps the index true."""

    EVERY_LIST_SERVED = True
    NOVA_EXT_OPTIONS = {
        'nova_ext_instance_list': {'driver': 'index'},
        'nova_ext_notifications': {'consumers': ['index']},
        'notifications': {'notification_format': 'versioned',
                          'notify_on_state_change': 'vm_and_task_state'},
    }

    def assertIndexTrue(self):
        self.index.wait_fresh()
        for uri in ('servers/detail?all_tenants=1&deleted=true',
                    'servers/detail?all_tenants=1'):
            self.assertSameAnswer(self.admin_api, uri)

    def test_lifecycle(self):
        server = self._create_server(host='compute1-1', networks='none')
        self.assertIndexTrue()
        self._stop_server(server)
        self.assertIndexTrue()
        self.api.post_server_action(server['id'], {'lock': {}})
        self.assertIndexTrue()
        other = self._create_server(host='compute2-1', networks='none')
        self.assertIndexTrue()
        self._delete_server(other)
        self.assertIndexTrue()
        huge = self._create_flavor(memory_mb=512, vcpu=10, disk=1)
        self._create_server(flavor_id=huge, networks='none',
                            expected_state='ERROR')
        self.assertIndexTrue()


class TestIndexWithBuildRequests(IndexTestCase):
    """Servers not scheduled yet are listed by Nova, before the index's."""

    def test_build_requests_and_markers(self):
        for host in ('compute1-1', 'compute2-1'):
            self._create_server(host=host, networks='none')
        # The conductor never schedules these: they stay build requests.
        self.stub_out('nova.conductor.api.ComputeTaskAPI.'
                      'schedule_and_build_instances',
                      lambda *args, **kwargs: None)
        pending_ids = [self._create_server(
            name='pending-%d' % n, networks='none',
            expected_state='BUILD')['id'] for n in range(2)]
        self.build_request_ids.update(pending_ids)
        self.sync_index()
        got = self.assertSameAnswer(self.admin_api, 'servers/detail').json()
        # Nova lists build requests first, outside the sort order.
        self.assertEqual(
            (set(pending_ids), {'BUILD'}),
            ({s['id'] for s in got['servers'][:2]},
             {s['status'] for s in got['servers'][:2]}))
        self.assertEqual(4, len(got['servers']))
        for uri in ('servers?limit=1',
                    'servers/detail?limit=3',
                    'servers?sort_key=display_name&sort_dir=asc',
                    'servers/detail?marker=%s' % pending_ids[0],
                    'servers/detail?marker=%s&limit=1' % pending_ids[1]):
            self.assertSameAnswer(self.admin_api, uri)

    def test_build_requests_of_each_project(self):
        # A project's own build request, as its member sees it, and
        # another project's, which its member's list does not read.
        self._create_server(host='compute1-1', networks='none')
        other = population.other_project_api(self)
        self._create_server(networks='none', api=other)
        self.stub_out('nova.conductor.api.ComputeTaskAPI.'
                      'schedule_and_build_instances',
                      lambda *args, **kwargs: None)
        pending = self._create_server(
            name='pending', networks='none', expected_state='BUILD',
            api=self.api)['id']
        self.build_request_ids.add(pending)
        self.sync_index()
        for api, shown in ((self.api, True), (other, False),
                           (self.admin_api, True)):
            for path in ('servers', 'servers/detail'):
                got = self.assertSameAnswer(api, path).json()
                self.assertEqual(shown, pending in {
                    s['id'] for s in got['servers']}, (api.auth_user, path))
        got = self.assertSameAnswer(
            self.admin_api, 'servers?all_tenants=1').json()
        self.assertEqual(pending, got['servers'][0]['id'])
        # Nova's lookup of the build requests refuses more sort directions
        # than keys, where there are some to read; with none (as the other
        # project's member lists), so does the index's query: Nova answers.
        for api in (self.api, other):
            self.assertSameAnswer(
                api, 'servers?sort_key=display_name&sort_dir=asc&'
                'sort_dir=desc', served=False)


class TestFastRenderWithBuildRequests(TestIndexWithBuildRequests):
    """Pages with build requests are rendered by Nova, the others by us."""

    NOVA_EXT_OPTIONS = FAST_OPTIONS
    FAST_RENDER = True

    def test_build_requests_and_markers(self):
        super().test_build_requests_and_markers()
        counts = self.selector.stats.snapshot()
        # Both kinds of page were met: the assertions of each request
        # checked which one it was.
        self.assertGreater(counts['handed'], 0, counts)
        self.assertGreater(counts['rendered'], 0, counts)


class TestRenderCacheWithBuildRequests(IndexTestCase):
    """A body kept whole answers nothing once a build request comes."""

    NOVA_EXT_OPTIONS = CACHED_OPTIONS
    FAST_RENDER = True

    def test_a_build_request_after_a_kept_body(self):
        for host in ('compute1-1', 'compute2-1'):
            self._create_server(host=host, networks='none')
        self.sync_index()
        bodies = page_bodies.cache(ext_conf.CONF)
        self._get(self.admin_api, 'servers')
        hits = bodies.hits
        self.assertSameAnswer(self.admin_api, 'servers')
        self.assertGreater(bodies.hits, hits)
        # The conductor never schedules it: it stays a build request,
        # which Nova lists first; the page's rows are the same.
        self.stub_out('nova.conductor.api.ComputeTaskAPI.'
                      'schedule_and_build_instances',
                      lambda *args, **kwargs: None)
        pending = self._create_server(name='pending', networks='none',
                                      expected_state='BUILD')['id']
        self.build_request_ids.add(pending)
        hits = bodies.hits
        got = self.assertSameAnswer(self.admin_api, 'servers').json()
        self.assertEqual(pending, got['servers'][0]['id'])
        self.assertEqual(hits, bodies.hits)


class TestRenderCacheFollowsNotifications(_RenderCacheMixin,
                                          TestIndexFollowsNotifications):
    """Documents rendered before a change are never served after it."""

    NOVA_EXT_OPTIONS = dict(
        TestIndexFollowsNotifications.NOVA_EXT_OPTIONS, **CACHED_OPTIONS)
    FAST_RENDER = True
