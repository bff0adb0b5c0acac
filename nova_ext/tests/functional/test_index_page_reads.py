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
"""What a page nova_ext renders reads at request time, and from where.

The volumes of a page are read from the index, which holds the block device
mappings: no cell is read for them. They follow attach, detach and delete
(notifications) and the update of 2.85 that Nova does not notify (the
``index-refresh`` API handler).

The index cannot hold a host's status (it follows the heartbeats), so the
services behind host_status are read from the cells at request time; and
only for callers to whom policy shows host_status, since nothing else in
the view reads them. Every state Nova computes (UP, MAINTENANCE, UNKNOWN,
DOWN) is compared with Nova's answer, for an admin and for a member under
each host_status policy. nova-api keeps what it read (``reuse_services``)
and reads a cell again only when a service notification, a missed
heartbeat or time says its services may give another status.
"""

import contextlib
import datetime
import operator
import threading

import fixtures
import nova.conf as nova_conf
from nova.tests import fixtures as nova_fixtures
from oslo_utils import timeutils
import sqlalchemy as sa

from nova_ext.index.marks import pending
from nova_ext.instance_list import index_reads
from nova_ext.instance_list import services
from nova_ext.tests.functional import population
from nova_ext.tests.functional import test_index_parity

UNKNOWN_ONLY = 'os_compute_api:servers:show:host_status:unknown-only'
ANY_STATUS = 'os_compute_api:servers:show:host_status'


@contextlib.contextmanager
def _reads(table, where='', unless=None, thread=None):
    """Collect the databases (URLs) any engine reads ``table`` from.

    :param where: text the statement must hold too: the computes' heartbeats
        read their service row meanwhile, by id, which must not count.
    :param unless: text of statements that do not count.
    :param thread: the ident of the only thread whose reads count.
    """
    seen = []

    def listen(conn, cursor, statement, *args):
        if thread is not None and threading.get_ident() != thread:
            return
        if ('FROM %s' % table in statement and where in statement and
                not (unless and unless in statement)):
            seen.append(str(conn.engine.url))

    sa.event.listen(sa.engine.Engine, 'before_cursor_execute', listen)
    try:
        yield seen
    finally:
        sa.event.remove(sa.engine.Engine, 'before_cursor_execute', listen)


class _Clock(fixtures.Fixture):
    """Stops oslo's clock (Nova's servicegroup API reads it) for a test."""

    def _setUp(self):
        self.now = timeutils.utcnow()
        self.useFixture(fixtures.MockPatchObject(
            timeutils, 'utcnow', side_effect=self._utcnow))

    def _utcnow(self, with_timezone=False):
        if with_timezone:
            return self.now.replace(tzinfo=datetime.timezone.utc)
        return self.now

    def advance(self, seconds):
        self.now += datetime.timedelta(seconds=seconds)


class _HostStatusCase(test_index_parity.IndexTestCase):

    FAST_RENDER = True

    def setUp(self):
        super().setUp()
        self.servers = population.build(self)
        self.sync_index()

    def _service(self, host):
        return population.compute_service(host)

    def _unknown(self, host):
        """Stop a compute and age its last heartbeat past service_down_time.

        Nova then reports its servers' host as UNKNOWN.
        """
        self.computes[host].stop()
        population.age_heartbeat(host)

    def _compare(self, api, uri='servers/detail?all_tenants=1'):
        with _reads('services', 'services.host IN') as reads:
            got = self._get(api, uri)
        self.assertEqual(200, got.status_code, got.text)
        self.assertSameAnswer(api, uri)
        statuses = {s['id']: s.get('host_status')
                    for s in got.json()['servers']}
        return statuses, reads


class TestHostStatusParity(_HostStatusCase):
    """Every page reads its services (reuse_services off)."""

    NOVA_EXT_OPTIONS = {'nova_ext_instance_list': dict(
        test_index_parity.CACHED_OPTIONS['nova_ext_instance_list'],
        reuse_services=False)}

    def test_every_status_for_each_policy(self):
        s = self.servers
        self.admin_api.api_put(
            '/os-services/%s' % self._service('compute2-1').uuid,
            {'status': 'disabled', 'disabled_reason': 'parity'})
        self._unknown('compute1-1')

        statuses, reads = self._compare(self.admin_api)
        self.assertEqual('UNKNOWN', statuses[s['active1']['id']])
        self.assertEqual('MAINTENANCE', statuses[s['locked2']['id']])
        self.assertEqual('', statuses[s['shelved2']['id']])
        # The first page is rendered cold, in two passes: each cell's
        # services are read once all the same.
        self.assertEqual(2, len(reads), reads)

        # A member, by default, sees no host_status: nothing reads them.
        statuses, reads = self._compare(self.api, 'servers/detail')
        self.assertEqual({None}, set(statuses.values()))
        self.assertEqual([], reads)

        self.policy.set_rules({UNKNOWN_ONLY: '@'}, overwrite=False)
        statuses, reads = self._compare(self.api, 'servers/detail')
        self.assertEqual('UNKNOWN', statuses[s['active1']['id']])
        self.assertIsNone(statuses[s['locked2']['id']])
        self.assertTrue(reads)

        self.policy.set_rules({ANY_STATUS: '@'}, overwrite=False)
        statuses, _reads = self._compare(self.api, 'servers/detail')
        self.assertEqual('MAINTENANCE', statuses[s['locked2']['id']])

        # Forced down wins over disabled.
        self.admin_api.microversion = '2.53'
        self.admin_api.api_put(
            '/os-services/%s' % self._service('compute2-1').uuid,
            {'forced_down': True})
        self.admin_api.microversion = 'latest'
        statuses, _reads = self._compare(self.admin_api)
        self.assertEqual('DOWN', statuses[s['locked2']['id']])

        # Before 2.16 there is no host_status, for anyone.
        self.admin_api.microversion = '2.15'
        statuses, reads = self._compare(self.admin_api)
        self.assertEqual({None}, set(statuses.values()))
        self.assertEqual([], reads)


class TestKeptServices(_HostStatusCase):
    """What nova-api keeps of the services, with the index consumer."""

    NOVA_EXT_OPTIONS = dict(
        test_index_parity.CACHED_OPTIONS,
        nova_ext_notifications={'consumers': ['index']},
        notifications={'notification_format': 'versioned'})

    def _admin_page(self):
        self.index.wait_fresh()
        return self._compare(self.admin_api)

    def test_read_again_only_when_the_status_may_differ(self):
        s = self.servers
        statuses, reads = self._admin_page()
        self.assertEqual('UP', statuses[s['active1']['id']])
        self.assertEqual('UP', statuses[s['locked2']['id']])
        self.assertEqual(2, len(reads), reads)
        statuses, reads = self._admin_page()
        self.assertEqual([], reads)

        # Nova notifies the change: its cell, only, is read again.
        cell2 = s['locked2']['id']
        self.admin_api.api_put(
            '/os-services/%s' % self._service('compute2-1').uuid,
            {'status': 'disabled', 'disabled_reason': 'kept'})
        statuses, reads = self._admin_page()
        self.assertEqual('MAINTENANCE', statuses[cell2])
        self.assertEqual(1, len(reads), reads)
        self.assertEqual([], self._admin_page()[1])

        # A compute that stops is UP until service_down_time after its last
        # heartbeat, for Nova and from what was kept; then its cell is read.
        clock = self.useFixture(_Clock())
        self.computes['compute1-1'].stop()
        statuses, reads = self._admin_page()
        self.assertEqual('UP', statuses[s['active1']['id']])
        self.assertEqual([], reads)
        # Past half of service_down_time its heartbeat is read again, while
        # it still shows the host UP: kept, it could expire before Nova's
        # view reads the clock. Disabled compute2-1's services are kept.
        clock.advance(nova_conf.CONF.service_down_time *
                      services.UP_MARGIN + 1)
        statuses, reads = self._admin_page()
        self.assertEqual('UP', statuses[s['active1']['id']])
        self.assertEqual(1, len(reads), reads)
        clock.advance(nova_conf.CONF.service_down_time + 1)
        statuses, reads = self._admin_page()
        self.assertEqual('UNKNOWN', statuses[s['active1']['id']])
        # Nothing is kept beyond service_down_time: both cells.
        self.assertEqual(2, len(reads), reads)
        # A host shown down is read every time: a heartbeat may come.
        self.assertEqual(1, len(self._admin_page()[1]))

        self.admin_api.microversion = '2.53'
        self.admin_api.api_put(
            '/os-services/%s' % self._service('compute2-1').uuid,
            {'forced_down': True})
        self.admin_api.microversion = 'latest'
        statuses, reads = self._admin_page()
        self.assertEqual('DOWN', statuses[cell2])
        self.assertEqual(2, len(reads), reads)


class TestPageVolumes(test_index_parity.IndexTestCase):

    NOVA_EXT_OPTIONS = dict(
        test_index_parity.CACHED_OPTIONS,
        nova_ext_notifications={'consumers': ['index']},
        notifications={'notification_format': 'versioned',
                       'notify_on_state_change': 'vm_and_task_state'})
    FAST_RENDER = True

    def _volumes(self, uri='servers/detail?all_tenants=1'):
        """The volumes of each server; the page is compared with Nova's."""
        self.index.wait_fresh()
        # Not the re-reads of the list's catch-up (a notification may come
        # after wait_fresh), which read whole instances from their cells
        # in id order; the view's reads of a page's volumes are unordered.
        with _reads('block_device_mapping',
                    unless='ORDER BY block_device_mapping.id') as reads:
            got = self._get(self.admin_api, uri)
        self.assertEqual(200, got.status_code, got.text)
        self.assertSameAnswer(self.admin_api, uri)
        self.assertEqual({str(self.index.engine.url)}, set(reads))
        return {s['id']: s['os-extended-volumes:volumes_attached']
                for s in got.json()['servers']}

    def _delete_on_termination(self, server, vol):
        """The update of 2.85, which Nova does not notify."""
        self.api.microversion = '2.85'
        self.api.api_put(
            '/servers/%s/os-volume_attachments/%s' % (server['id'], vol),
            {'volumeAttachment': {'volumeId': vol,
                                  'delete_on_termination': True}},
            check_response_status=[202])

    def _indexed_with_a_volume(self):
        """``(server, volume)``: a server with a volume, in the index."""
        vol = nova_fixtures.CinderFixture.SWAP_OLD_VOL
        server = self._create_server(host='compute1-1', networks='none')
        self._attach_volume(server, vol)
        self.index.wait_fresh()
        return server, vol

    def test_a_kept_page_dates_its_volumes_by_its_generation(self):
        """A page kept at a generation reads its volumes at the same one.

        A page listed anew may show a later state than the generation
        read before it, so its volumes are read at a generation read after
        it. A kept page is the index's state at its generation: its
        volumes are read at that one, without a read of their own.
        """
        server, vol = self._indexed_with_a_volume()
        uri = 'servers/detail?all_tenants=1'
        reads = []
        for _ in range(2):
            with _reads('nova_ext_index_generation',
                        thread=threading.get_ident()) as read:
                got = self.assertSameAnswer(self.admin_api, uri)
            self.assertEqual(200, got.status_code, got.text)
            reads.append(len(read))
        # The settled read of each, and the first's read for its volumes.
        self.assertEqual([2, 1], reads)

        # Brought up to date, the page and its volumes are of one state:
        # Nova's answer right after the change, served by nova_ext.
        self._delete_on_termination(server, vol)
        got = self.assertSameAnswer(self.admin_api, uri)
        self.assertEqual(200, got.status_code, got.text)
        shown = {s['id']: s['os-extended-volumes:volumes_attached']
                 for s in got.json()['servers']}
        self.assertEqual([{'id': vol, 'delete_on_termination': True}],
                         shown[server['id']])

    def test_a_kept_pages_volumes_are_handed_out_as_kept(self):
        """Not copied for each request: read-only, as Nova's view reads."""
        server, vol = self._indexed_with_a_volume()
        uri = 'servers/detail?all_tenants=1'
        given = []
        read = index_reads.volumes

        def volumes(*args, **kwargs):
            given.append(read(*args, **kwargs))
            return given[-1]
        self.useFixture(fixtures.MonkeyPatch(
            'nova_ext.instance_list.index_reads.volumes', volumes))
        for _ in range(2):
            got = self.assertSameAnswer(self.admin_api, uri)
            self.assertEqual(200, got.status_code, got.text)
        self.assertEqual(2, len(given))
        first, second = (found[server['id']] for found in given)
        self.assertIs(first, second)
        # With its root disk's mapping, which has no volume.
        self.assertEqual([None, vol], sorted(
            (v['volume_id'] for v in second), key=lambda v: v is not None))
        self.assertRaises(TypeError, operator.setitem, second[-1],
                          'volume_id', None)

    def test_volumes_follow_the_server(self):
        vol = nova_fixtures.CinderFixture.SWAP_OLD_VOL
        server = self._create_server(host='compute1-1', networks='none')
        self._attach_volume(server, vol)
        self.assertEqual([{'id': vol, 'delete_on_termination': False}],
                         self._volumes()[server['id']])

        # Nova sends no notification for this one.
        self._delete_on_termination(server, vol)
        self.assertEqual(0, pending.count(self.index.engine))
        self.assertEqual([{'id': vol, 'delete_on_termination': True}],
                         self._volumes()[server['id']])

        self.api.delete_server_volume(server['id'], vol)
        self._wait_for_volume_detach(server['id'], vol)
        self.notifier.wait_for_versioned_notifications(
            'instance.volume_detach.end')
        self.assertEqual([], self._volumes()[server['id']])

        # A deleted server's mappings are deleted with it; listed with the
        # deleted servers, it shows what Nova shows.
        self._attach_volume(server, vol)
        self._delete_server(server)
        self._volumes('servers/detail?all_tenants=1&deleted=true')
