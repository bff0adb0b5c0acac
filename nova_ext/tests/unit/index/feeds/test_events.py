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
"""Which notifications are instance changes, and when they happened."""

import datetime

from nova_ext.index.feeds import events
from nova_ext.tests.unit import base


class TestEvents(base.TestCase):

    PAYLOAD = {'nova_object.name': 'InstanceActionPayload',
               'nova_object.data': {'uuid': 'u-1'}}

    def test_change(self):
        utc = datetime.timezone.utc
        when = datetime.datetime(2026, 11, 22, 15, 30, 10, 500000, utc)
        self.assertEqual(
            ('u-1', when.timestamp()),
            events.change('instance.update', self.PAYLOAD,
                          '2026-11-22 15:30:10.500000'))

    def test_not_an_instance_change(self):
        self.assertIsNone(events.change('service.update', self.PAYLOAD,
                                        '2026-11-22 15:30:10'))
        self.assertIsNone(events.change('instance.update', {'x': 1},
                                        '2026-11-22 15:30:10'))
        self.assertIsNone(events.change('instance.update', 'text',
                                        '2026-11-22 15:30:10'))

    def test_unreadable_time_is_now(self):
        self.assertEqual(123.0, events.event_time('yesterday', default=123.0))
