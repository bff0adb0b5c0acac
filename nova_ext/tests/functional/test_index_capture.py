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
"""Every change Nova commits is in the very next list.

No notification consumer runs here: the index learns of changes only from
capture (``[nova_ext_index]capture``) and the list request's catch-up.
After each change, without waiting for anything, every list is compared
byte for byte with Nova's answer at that moment, and must have been served
by the index.
"""

import collections
import threading

from nova.cmd import manage
from nova import context as nova_context
from nova.db.main import api as main_db_api
from oslo_db import exception as db_exc

from nova_ext import conf as ext_conf
from nova_ext.index.apply import refresh
from nova_ext.index.marks import pending
from nova_ext.index.marks import process
from nova_ext.instance_list import page_cache
from nova_ext.seams import db_writes
from nova_ext.seams.internals import heap
from nova_ext.tests.functional import test_index_parity as parity

CAPTURE = {'capture': True}

#: Microversions whose views differ in what a list shows.
MICROVERSIONS = ('2.1', '2.73', 'latest')


class _CaptureBase(parity.IndexTestCase):

    NOVA_EXT_OPTIONS = dict(parity.CACHED_OPTIONS,
                            nova_ext_index=CAPTURE)
    FAST_RENDER = True

    def setUp(self):
        super().setUp()
        self.addCleanup(db_writes.detach)
        self.assertTrue(db_writes.attached())

    def assertListsNow(self, queries=('', 'all_tenants=1&deleted=true')):
        """Every list, at every microversion, for admin and member."""
        for version in MICROVERSIONS:
            for api in (self.admin_api, self.api):
                api.microversion = version
                for path in ('servers', 'servers/detail'):
                    for query in queries:
                        if 'all_tenants' in query and api is self.api:
                            continue
                        self.assertSameAnswer(
                            api, path + ('?' + query if query else ''))
        self.admin_api.microversion = self.api.microversion = 'latest'

    def _built(self):
        """A server whose build has ended: Nova writes nothing more of it.

        ACTIVE shows before the compute has done with the build; a test
        that counts what is left pending waits for the build's end, and
        for the ends of its transactions to be recorded: they are up to
        capture_release_delay late, and each renews the instance's mark.
        """
        server = self._create_server(host='compute1-1', networks='none')
        self._wait_for_instance_action_event(
            server, 'create', 'compute__do_build_and_run_instance',
            'success')
        self.assertTrue(process.get_batcher(ext_conf.CONF).flush(10))
        return server


class TestCaptureReadYourWrites(_CaptureBase):

    EVERY_LIST_SERVED = True

    def test_api_actions_show_at_once(self):
        server = self._create_server(host='compute1-1', networks='none')
        self.assertListsNow()
        self.attach_port(server, self.neutron.port_1)
        self.assertListsNow()
        self.api.post_server_action(
            server['id'], {'lock': {'locked_reason': 'maintenance'}})
        self.assertListsNow()
        self.api.post_server_action(server['id'], {'unlock': None})
        self.assertListsNow()
        self.api.post_server_metadata(server['id'], {'k': 'v'})
        self.assertListsNow(('', 'all_tenants=1&deleted=true', 'name=x'))
        self.api.put_server_tags(server['id'], ['blue'])
        self.assertListsNow(('', 'tags=blue'))
        self.api.put_server(server['id'], {'server': {'name': 'renamed'}})
        self.assertListsNow(('', 'name=renamed'))
        self._stop_server(server)
        self.assertListsNow(('', 'status=SHUTOFF'))
        self._delete_server(server)
        self.assertListsNow()

    def test_frozen_lists_show_writes_at_once(self):
        # With gc_freeze, the lists right after each write are Nova's at
        # that moment, and served by nova_ext (EVERY_LIST_SERVED), as
        # without it: freezing leaves the caches and the catch-up alone.
        heap.reset()
        self.addCleanup(heap.reset)
        self.flags(gc_freeze=True, group='nova_ext_instance_list')
        server = self._create_server(host='compute1-1', networks='none')
        self.assertListsNow()
        self.assertGreater(heap.frozen(), 0)
        self.api.put_server(server['id'], {'server': {'name': 'frozen'}})
        self.assertListsNow(('', 'name=frozen'))
        self._stop_server(server)
        self.assertListsNow(('', 'status=SHUTOFF'))
        self._delete_server(server)
        self.assertListsNow()

    def test_a_kept_page_written_off_and_on_shows_writes_at_once(self):
        # A full page kept; then a server off it written, then one on it.
        # Each list right after the write is brought up to date by the
        # request's catch-up, not listed anew (the page kept as it was
        # for the first, its changed row read again for the second), and
        # is Nova's at that moment, served by nova_ext.
        pages = page_cache.cache(ext_conf.CONF)
        older = self._built()
        newer = self._built()
        queries = ('limit=1', 'all_tenants=1&limit=1')
        self.assertListsNow(queries)
        for n, server in enumerate((older, newer)):
            self.api.put_server(server['id'],
                                {'server': {'name': 'page-%d' % n}})
            before = collections.Counter(pages.outcomes)
            self.assertListsNow(queries)
            outcomes = pages.outcomes - before
            self.assertGreater(outcomes['brought'], 0, n)
            self.assertEqual(0, outcomes['listed'], n)

    def test_network_events_show_at_once(self):
        port = self.neutron.port_1
        server = self._create_server(host='compute2-1', networks='none')
        self.attach_port(server, port)
        fixed = port['fixed_ips'][0]['ip_address']
        self.assertListsNow(('', 'ip=%s' % fixed))

        floating = '172.24.4.10'

        def floating_ips(retrieve_all=True, **params):
            if params.get('port_id') == port['id']:
                return {'floatingips': [{
                    'id': 'fip-1', 'floating_ip_address': floating,
                    'port_id': port['id'], 'fixed_ip_address': fixed}]}
            return {'floatingips': []}

        self.stub_out(self.neutron.__module__ + '.NeutronFixture.'
                      'list_floatingips',
                      lambda _self, *a, **kw: floating_ips(*a, **kw))
        self._external_event(server, 'network-changed', port['id'])
        self.assertListsNow(('', 'ip=%s' % fixed, 'ip=172.24'))
        detail = self.admin_api.get_server(server['id'])
        self.assertIn(floating, str(detail['addresses']))

        self.neutron.delete_port(port['id'])
        self._external_event(server, 'network-vif-deleted', port['id'])
        self.assertListsNow(('', 'ip=%s' % fixed))
        self.assertEqual({}, self.admin_api.get_server(
            server['id'])['addresses'])

    def attach_port(self, server, port):
        """Attach ``port`` to ``server``.

        A server booted with a port keeps an empty network info cache in
        this harness; one with an attached port does not.
        """
        self.api.attach_interface(
            server['id'], {'interfaceAttachment': {'port_id': port['id']}})
        self.assertTrue(self.admin_api.get_server(server['id'])['addresses'])

    def _external_event(self, server, name, tag):
        self.admin_api.api_post('/os-server-external-events', {
            'events': [{'name': name, 'server_uuid': server['id'],
                        'tag': tag}]})

    def test_failed_build_shows_its_fault(self):
        huge = self._create_flavor(memory_mb=512, vcpu=10, disk=1)
        server = self._create_server(flavor_id=huge, networks='none',
                                     expected_state='ERROR')
        self.assertListsNow(('', 'status=ERROR'))
        got = self.admin_api.get_server(server['id'])
        self.assertIn('fault', got)

    def test_archived_servers_leave_at_once(self):
        server = self._create_server(host='compute1-1', networks='none')
        self._delete_server(server)
        query = 'all_tenants=1&deleted=true'
        self.assertListsNow(('', query))
        manage.DbCommands().archive_deleted_rows(max_rows=1000)
        self.assertListsNow(('', query,
                             'all_tenants=1&changes-since=2000-01-01'))
        # A marker of an archived server is Nova's 400.
        got = self.assertSameAnswer(
            self.admin_api, 'servers/detail?marker=%s' % server['id'],
            served=False)
        self.assertEqual(400, got.status_code)

    def test_an_archive_that_stops_halfway(self):
        # The cell's rows archived, the mapping not: the archive failed in
        # between, as Nova's does when a shadow table refuses a row.
        server = self._create_server(host='compute1-1', networks='none')
        self._delete_server(server)
        uri = 'servers/detail?all_tenants=1&deleted=true'
        self.assertIn(server['id'],
                      self.assertSameAnswer(self.admin_api, uri).text)
        # Every change recorded and applied: no mark left to re-read it.
        self.assertTrue(process.get_batcher(ext_conf.CONF).flush(10))
        self.assertSameAnswer(self.admin_api, uri)
        self.assertEqual(0, pending.count(self.index.engine))
        ctx = nova_context.get_admin_context()
        with nova_context.target_cell(ctx, self.cell_mappings['cell1']) as c:
            main_db_api.archive_deleted_rows(c, max_rows=1000)
        got = self.assertSameAnswer(self.admin_api, uri, served=False)
        self.assertNotIn(server['id'], got.text)
        self.assertSameAnswer(self.admin_api, uri)

    def test_failed_volume_attach_leaves_at_once(self):
        server = self._create_server(host='compute2-1', networks='none')
        driver = type(self.computes['compute2-1'].manager.driver)

        def fail(*args, **kwargs):
            raise RuntimeError('attach failed, as the test asked')
        self.stub_out('%s.%s.attach_volume' % (driver.__module__,
                                               driver.__name__), fail)
        self.api.api_post(
            '/servers/%s/os-volume_attachments' % server['id'],
            {'volumeAttachment': {
                'volumeId': '7d000000-0000-4000-8000-000000000000'}},
            check_response_status=[])
        self.assertListsNow(('', 'changes-since=2000-01-01T00:00:00Z'))
        self.assertEqual([], self.admin_api.get_server(server['id'])[
            'os-extended-volumes:volumes_attached'])

    def test_volumes_in_novas_order(self):
        server = self._create_server(host='compute1-1', networks='none')
        # Attached in neither the order of their ids nor its reverse.
        for volume in ('9a000000-0000-4000-8000-000000000000',
                       '1b000000-0000-4000-8000-000000000000',
                       '5c000000-0000-4000-8000-000000000000'):
            self.api.api_post(
                '/servers/%s/os-volume_attachments' % server['id'],
                {'volumeAttachment': {'volumeId': volume}})
        self.assertListsNow(('', 'changes-since=2000-01-01T00:00:00Z'))

    def test_lists_catch_up_on_what_is_recorded(self):
        server = self._built()
        engine = self.index.engine
        self.assertListsNow()
        self.assertEqual({}, pending.take(engine, 10))
        # Recorded by capture, applied by the list request itself: no
        # worker runs in this test.
        self.api.post_server_action(server['id'], {'lock': {}})
        self.assertEqual([server['id']],
                         list(pending.take(engine, 10)))
        self.assertListsNow()
        # Held until the lock's transaction end is recorded, which renews
        # the mark; the next list applies that and removes it.
        self.assertTrue(process.get_batcher(ext_conf.CONF).flush(10))
        self.assertSameAnswer(self.api, 'servers/detail', served=True)
        self.assertEqual({}, pending.take(engine, 10))

    def test_own_changes_not_recorded_yet(self):
        # The index's lock was busy when this process wrote (capture gave
        # up after capture_timeout): its marks wait in the marker, which
        # commits them only when urged here. The list has them recorded
        # and applies them, rather than hand itself to Nova.
        server = self._built()
        self.assertSameAnswer(self.api, 'servers/detail', served=True)
        self.assertEqual({}, pending.take(self.index.engine, 10))
        process.reset()
        self.flags(notification_batch_timeout=3600, group='nova_ext_index')
        marker = process.get_batcher(ext_conf.CONF)
        marker.stall()
        self.api.put_server(server['id'], {'server': {'name': 'renamed'}})
        self.assertEqual([server['id']], list(process.held()))
        self.assertEqual({}, pending.take(self.index.engine, 10))
        self.assertSameAnswer(self.api, 'servers/detail?name=renamed',
                              served=True)
        self.assertEqual({}, process.held())
        self.assertListsNow(('', 'name=renamed'))


class TestCaptureUnmappedInstance(_CaptureBase):
    """An instance in a cell whose mapping names no cell."""

    CAST_AS_CALL = False

    def test_a_build_that_fails_before_its_mapping(self):
        # Nova's conductor creates the instance in its cell, and maps it
        # there only later; here it fails in between, as when its database
        # errs, and leaves the instance in the cell, unmapped.
        failed = threading.Event()

        def fail(*args, **kwargs):
            failed.set()
            raise db_exc.DBError('the quota check failed, as the test '
                                 'asked')
        self.stub_out('nova.conductor.manager.ComputeTaskManager.'
                      '_recheck_quota', fail)
        # In cell2: Nova's API looks for an unmapped instance in its own
        # database, which in this harness is cell1's, and deletes it there.
        server = self.admin_api.post_server({'server': {
            'name': 'unmapped', 'flavorRef': '1', 'networks': 'none',
            'imageRef': '155d900f-4e14-4e4c-a73d-069cbf4541e6',
            'availability_zone': 'nova:compute2-1'}})
        self.assertTrue(failed.wait(10))
        # Its build request is listed, and Nova's view renders it.
        self.build_request_ids.add(server['id'])
        self.assertSameAnswer(self.admin_api, 'servers')
        self.assertSameAnswer(self.admin_api, 'servers/detail')
        # Deleted while booting: the build request goes, the instance
        # stays in its cell, where Nova lists it.
        self.admin_api.delete_server(server['id'])
        self.build_request_ids.discard(server['id'])
        got = self.assertSameAnswer(self.admin_api, 'servers')
        self.assertIn(server['id'], got.text)
        self.assertListsNow()


class TestCatchUpLimit(_CaptureBase):

    NOVA_EXT_OPTIONS = dict(
        parity.CACHED_OPTIONS,
        nova_ext_index=dict(CAPTURE, catch_up_limit=1))

    def test_too_many_changes_are_nova_s(self):
        servers = [self._create_server(host='compute%d-1' % n,
                                       networks='none') for n in (1, 2)]
        for server in servers:
            self.api.post_server_action(server['id'], {'lock': {}})
        # Their transactions' ends recorded (capture_release_delay), the
        # marks are done with once applied.
        self.assertTrue(process.get_batcher(ext_conf.CONF).flush(10))
        self.assertEqual(2, len(pending.take(self.index.engine, 10)))
        before = self.selector.stats.snapshot()
        self.assertSameAnswer(self.admin_api, 'servers/detail',
                              served=False)
        after = self.selector.stats.snapshot()
        self.assertEqual(before['unservable'] + 1, after['unservable'])
        self.assertEqual('at least 2 marks pending, catch_up_limit 1',
                         after['last_reason'])
        # Nothing was dropped: once the worker has applied some, the
        # requests apply the rest.
        refresh.process_pending(nova_context.get_admin_context(),
                                ext_conf.CONF, limit=1)
        self.assertSameAnswer(self.admin_api, 'servers/detail')
        self.assertEqual({}, pending.take(self.index.engine, 10))
