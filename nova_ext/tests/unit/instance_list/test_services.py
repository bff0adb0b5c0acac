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
"""The services nova-api keeps for host_status, and when it reads again."""

import datetime

import fixtures
from oslo_db import exception as db_exc
from oslo_utils import timeutils

from nova_ext.index.feeds import service_changes
from nova_ext.instance_list import services
from nova_ext.tests.unit import base
from nova_ext.tests.unit.index import base as index_base

NOW = datetime.datetime(2026, 11, 23, 10, 0, 0)


def _row(**kw):
    row = {'host': 'h', 'forced_down': False, 'disabled': False,
           'last_seen_up': NOW, 'created_at': NOW - datetime.timedelta(1)}
    row.update(kw)
    return row


def _seconds(n):
    return datetime.timedelta(seconds=n)


class TestStillTrue(base.TestCase):

    def check(self, rows, now, generation=0, read_at=NOW):
        kept = services.Kept(0, read_at, rows)
        return services.still_true(kept, generation, now, 60)

    def test_a_heartbeat_that_shows_the_host_up(self):
        self.assertTrue(self.check([_row()], NOW + _seconds(30)))
        # A later heartbeat shows it up too; this one no longer does.
        self.assertFalse(self.check([_row()], NOW + _seconds(61)))

    def test_a_heartbeat_must_outlast_the_request(self):
        # Still within service_down_time, so it shows the host up now; but
        # Nova's view reads the clock later in the request, when it may not,
        # while a fresh read would find a newer heartbeat.
        for age in (31, 59, 60):
            self.assertFalse(self.check([_row()], NOW + _seconds(age)))
        older = _row(last_seen_up=NOW - _seconds(31))
        self.assertFalse(self.check([_row(), older], NOW))

    def test_a_host_shown_down_is_read_again(self):
        old = _row(last_seen_up=NOW - _seconds(61))
        self.assertFalse(self.check([old], NOW))
        self.assertFalse(self.check([_row(), old], NOW))

    def test_no_heartbeat_yet_counts_from_creation(self):
        self.assertTrue(self.check(
            [_row(last_seen_up=None, created_at=NOW)], NOW + _seconds(5)))
        self.assertFalse(self.check(
            [_row(last_seen_up=None)], NOW + _seconds(5)))

    def test_flags_hold_until_their_host_changes(self):
        stale = NOW - _seconds(600)
        for flags in ({'disabled': True}, {'forced_down': True}):
            rows = [_row(last_seen_up=stale, **flags)]
            self.assertTrue(self.check(rows, NOW + _seconds(30)))
            self.assertFalse(self.check(rows, NOW, generation=1))
            # Nothing is kept longer than service_down_time.
            self.assertFalse(self.check(rows, NOW + _seconds(61)))

    def test_a_host_without_services(self):
        self.assertTrue(self.check([], NOW + _seconds(60)))
        self.assertFalse(self.check([], NOW, generation=2))

    def test_a_clock_gone_backwards_reads_again(self):
        self.assertFalse(self.check([_row()], NOW - _seconds(1)))


class TestServices(index_base.IndexDBTestCase):

    def setUp(self):
        super().setUp()
        self.reads = []
        self.rows = {}

        def read(ctx, hosts_by_cell):
            self.reads.append({cell: set(hosts) for cell, hosts in
                               hosts_by_cell.items() if hosts})
            return {(cell, host): self.rows.get(host, [])
                    for cell, hosts in hosts_by_cell.items()
                    for host in hosts}
        self.useFixture(fixtures.MockPatchObject(services, 'read', read))
        self.services = services.Services(self.conf.conf)
        self.now = NOW
        self.useFixture(fixtures.MockPatchObject(
            timeutils, 'utcnow', side_effect=lambda: self.now))

    def test_reads_again_only_what_may_have_changed(self):
        self.rows = {'a': [_row(host='a')],
                     'b': [_row(host='b', disabled=True)]}
        hosts = {1: {'a'}, 2: {'b'}}
        self.services.by_host(None, hosts)
        found = self.services.by_host(None, hosts)
        self.assertEqual([hosts, {}], self.reads)
        self.assertEqual(self.rows['b'], found[(2, 'b')])

        service_changes.bump(self.engine, ['b'])
        self.services.by_host(None, hosts)
        self.assertEqual({2: {'b'}}, self.reads[-1])

        self.now += _seconds(61)
        self.services.by_host(None, hosts)
        self.assertEqual(hosts, self.reads[-1])
        self.assertEqual({'kept': 3, 'read': 5}, dict(self.services.counts))

    def test_off_and_with_other_servicegroup_drivers(self):
        hosts = {1: {'a'}}
        self.flags(reuse_services=False, group='nova_ext_instance_list')
        self.services.by_host(None, hosts)
        self.services.by_host(None, hosts)
        self.flags(reuse_services=True, group='nova_ext_instance_list')
        self.flags(servicegroup_driver='mc')
        self.services.by_host(None, hosts)
        self.services.by_host(None, hosts)
        self.assertEqual([hosts] * 4, self.reads)

    def test_unreadable_generations_read_everything(self):
        hosts = {1: {'a'}}
        self.services.by_host(None, hosts)
        self.useFixture(fixtures.MockPatchObject(
            service_changes, 'generations',
            side_effect=db_exc.DBError('away')))
        self.services.by_host(None, hosts)
        self.assertEqual([hosts] * 2, self.reads)
