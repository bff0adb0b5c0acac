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
"""Service changes: the generation of each host's services."""

import datetime
import importlib
import threading
from unittest import mock

import fixtures
from oslo_db import exception as db_exc
import oslo_messaging

from nova_ext.cmd import indexer
from nova_ext import direct_reads
from nova_ext.index.feeds import consumer
from nova_ext.index.feeds import listener
from nova_ext.index.feeds import service_changes
from nova_ext.index.marks import pending
from nova_ext.index.upkeep import migration
from nova_ext.tests.unit.index import base as index_base

NOW = datetime.datetime(2026, 11, 23, 10, 0, 0)


def _service_message(host, event_type='service.update'):
    return {'ctxt': {}, 'publisher_id': 'nova-api:h1',
            'event_type': event_type,
            'payload': {'nova_object.data': {'host': host, 'uuid': 'x'}},
            'metadata': {'timestamp': '2026-11-22 10:00:00.000000'}}


class TestGenerations(index_base.IndexDBTestCase):

    def test_each_bump_moves_each_host_on_by_one(self):
        self.assertEqual({'a': 0, 'b': 0},
                         service_changes.generations(self.engine, ['a', 'b'],
                                                     direct_reads.rows))
        service_changes.bump(self.engine, ['a'])
        service_changes.bump(self.engine, ['a', 'b', 'a'])
        self.assertEqual({'a': 2, 'b': 1, 'c': 0},
                         service_changes.generations(self.engine,
                                                     ['a', 'b', 'c'],
                                                     direct_reads.rows))

    def test_read_in_one_statement_for_any_number_of_hosts(self):
        service_changes.bump(self.engine, ['h1', 'h3'])
        service_changes.bump(self.engine, ['h3'])
        statements = []

        def rows(engine, statement, params):
            statements.append(statement)
            return direct_reads.rows(engine, statement, params)
        for count in range(1, 6):
            hosts = ['h%d' % n for n in range(count)]
            expected = {host: 0 for host in hosts}
            expected.update((host, generation) for host, generation in
                            (('h1', 1), ('h3', 2)) if host in hosts)
            self.assertEqual(expected, service_changes.generations(
                self.engine, hosts, rows))
            self.assertEqual(service_changes.generations(
                self.engine, hosts, direct_reads.rows), expected)
        # Padded to 1, 2, 4, 4 and 8 hosts: four statements.
        self.assertEqual(5, len(statements))
        self.assertEqual(4, len(set(map(id, statements))))

    def test_concurrent_bumps_are_all_counted(self):
        errors = []

        def bump():
            try:
                for _ in range(10):
                    service_changes.bump(self.engine, ['h1', 'h2'])
            except Exception as e:
                errors.append(e)

        threads = [threading.Thread(target=bump) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        self.assertEqual([], errors)
        self.assertEqual({'h1': 40, 'h2': 40},
                         service_changes.generations(self.engine,
                                                     ['h1', 'h2'],
                                                     direct_reads.rows))

    def test_host_of_a_notification(self):
        payload = {'nova_object.data': {'host': 'cmp1'}}
        for event_type in service_changes.EVENT_TYPES:
            self.assertEqual('cmp1',
                             service_changes.host(event_type, payload))
        self.assertIsNone(service_changes.host('instance.update', payload))
        self.assertIsNone(service_changes.host('service.update', {}))
        self.assertIsNone(service_changes.host(
            'service.update', {'nova_object.data': {'host': None}}))


class TestListenerRecordsServiceChanges(index_base.IndexDBTestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MockPatchObject(listener.time, 'sleep'))
        self.wake = mock.Mock()
        self.endpoint = listener.Endpoint(self.conf.conf, wake=self.wake)

    def test_service_changes_move_their_hosts_on(self):
        result = self.endpoint.info([
            _service_message('cmp1'), index_base.message('a'),
            _service_message('cmp1', 'service.delete'),
            _service_message('cmp2', 'service.create')])
        self.assertEqual(oslo_messaging.NotificationResult.HANDLED, result)
        self.assertEqual({'cmp1': 1, 'cmp2': 1},
                         service_changes.generations(self.engine,
                                                     ['cmp1', 'cmp2'],
                                                     direct_reads.rows))
        self.assertEqual(['a'], list(pending.take(self.engine, 10)))
        self.assertEqual(3, self.endpoint.services)

    def test_only_service_changes_wake_no_worker(self):
        self.endpoint.info([_service_message('cmp1')])
        self.wake.assert_not_called()

    def test_batch_requeued_when_the_change_is_not_recorded(self):
        self.useFixture(fixtures.MockPatchObject(
            service_changes, 'bump', side_effect=db_exc.DBError('away')))
        self.assertEqual(
            oslo_messaging.NotificationResult.REQUEUE,
            self.endpoint.info([_service_message('cmp1')]))

    def test_the_listener_asks_for_service_changes(self):
        rule = listener.Endpoint.filter_rule

        def match(event_type):
            return rule.match({}, 'nova-api:h1', event_type, {}, {})

        for event_type in ('service.update', 'service.create',
                           'service.delete', 'instance.update'):
            self.assertTrue(match(event_type), event_type)
        self.assertFalse(match('service.updated'))
        self.assertFalse(match('compute.exception'))


class TestConsumerRecordsServiceChanges(index_base.BatcherTestCase):

    def test_recorded_at_once_and_never_raises(self):
        index = consumer.IndexConsumer(self.conf.conf)
        self.assertTrue(index.wants('service.update'))
        notification = mock.Mock(event_type='service.update',
                                 payload={'nova_object.data':
                                          {'host': 'cmp1'}})
        index.consume(notification)
        self.assertEqual({'cmp1': 1}, service_changes.generations(
            self.engine, ['cmp1'], direct_reads.rows))
        self.useFixture(fixtures.MockPatchObject(
            service_changes, 'bump', side_effect=db_exc.DBError('away')))
        index.consume(notification)
        self.assertEqual([], self.batches)


class TestIndexerNeedsTheSchema(index_base.IndexDBTestCase):

    def test_refuses_a_schema_older_than_its_code(self):
        self.assertIsNone(indexer.schema_problem(self.conf.conf))
        service_changes.bump(self.engine, ['cmp1'])
        with self.engine.begin() as conn:
            conn.exec_driver_sql('DROP TABLE nova_ext_index_service_changes')
            # What 0005 added, so that the schema is 0003's again.
            for index in importlib.import_module(
                    'nova_ext.index.upkeep.migrations.versions.'
                    '0005_name_sort_indexes').INDEXES:
                conn.exec_driver_sql('DROP INDEX %s' % index)
            conn.exec_driver_sql("UPDATE alembic_version "
                                 "SET version_num = '0003'")
        self.assertIn('index db_sync', indexer.schema_problem(self.conf.conf))
        migration.db_sync(self.conf.conf)
        self.assertIsNone(indexer.schema_problem(self.conf.conf))
        self.assertEqual({'cmp1': 0}, service_changes.generations(
            self.engine, ['cmp1'], direct_reads.rows))
