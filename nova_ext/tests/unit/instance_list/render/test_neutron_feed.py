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
"""What the Neutron feed reads of a message and of a transport URL.

The feed itself, on a real RabbitMQ, is in the functional tests
(``test_neutron_feed``).
"""

from nova_ext.instance_list.render import neutron_feed
from nova_ext.tests.unit import base


class TestNeutronFeedParts(base.TestCase):

    def test_event_types(self):
        body = {'oslo.version': '2.0',
                'oslo.message': '{"event_type": "port.update.end"}'}
        self.assertEqual('port.update.end', neutron_feed.event_type(body))
        self.assertIsNone(neutron_feed.event_type({'oslo.message': '{'}))
        self.assertTrue(neutron_feed.changes_groups(None))
        self.assertTrue(neutron_feed.changes_groups('rbac_policy.delete.end'))
        self.assertFalse(neutron_feed.changes_groups('router.update.end'))

    def test_request_ids(self):
        # As oslo.messaging packs a context: its keys prefixed.
        body = {'oslo.version': '2.0', 'oslo.message':
                '{"event_type": "port.update.start", '
                '"_context_request_id": "req-1"}'}
        self.assertEqual('req-1', neutron_feed.request_id(body))
        self.assertEqual('req-2', neutron_feed.request_id(
            {'_context_request_id': 'req-2'}))
        for body in ({'oslo.message': '{'}, {'_context_request_id': ''},
                     {'_context_request_id': 3}, {}, None):
            self.assertIsNone(neutron_feed.request_id(body))

    def test_kombu_url(self):
        self.assertEqual(
            'amqp://u%40x:p%2Fw@h1:5672/neutron;amqp://u%40x:p%2Fw@h2:5673/'
            'neutron', neutron_feed.kombu_url(
                'rabbit://u%40x:p%2Fw@h1:5672,u%40x:p%2Fw@h2:5673/neutron'))
        self.assertEqual('amqp://h:5672/%2F',
                         neutron_feed.kombu_url('rabbit://h/'))
        self.assertRaises(ValueError, neutron_feed.kombu_url,
                          'kafka://h:9092/')
