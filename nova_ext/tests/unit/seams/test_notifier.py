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
"""The nova_ext notification driver."""

from nova_ext import exception
from nova_ext.notifications import dispatcher
from nova_ext.seams import db_writes
from nova_ext.seams import notifier
from nova_ext import startup_log
from nova_ext.tests import fixtures as ext_fixtures
from nova_ext.tests import plugins as test_plugins
from nova_ext.tests.unit import base


def _message(event_type='instance.update', payload=None):
    return {'event_type': event_type, 'publisher_id': 'nova-compute:h1',
            'timestamp': '2026-11-22 10:00:00.000000', 'message_id': 'm1',
            'payload': payload if payload is not None else {
                'nova_object.name': 'InstanceUpdatePayload',
                'nova_object.data': {}}}


class TestDriver(base.TestCase):

    def setUp(self):
        super().setUp()
        self.install_test_plugins()
        self.addCleanup(dispatcher.reset)
        dispatcher.reset()

    def _driver(self):
        return notifier.NovaExtDriver(self.conf.conf, ['versioned'], None)

    def test_versioned_reaches_consumers_legacy_does_not(self):
        self.flags(consumers=['test-recorder'],
                   group='nova_ext_notifications')
        driver = self._driver()
        driver.notify({'user': 'u'}, _message(payload={'legacy': 1}),
                      'INFO', None)
        driver.notify({'user': 'u'}, _message(), 'INFO', None)
        self.assertTrue(dispatcher.get_dispatcher(self.conf.conf).drain(10))
        [got] = test_plugins.RecordingConsumer.received
        self.assertEqual('instance.update', got.event_type)
        self.assertEqual('nova-compute:h1', got.publisher_id)
        self.assertEqual({'user': 'u'}, got.context)

    def test_two_notifiers_share_one_dispatcher(self):
        self.assertIs(self._driver()._dispatcher, self._driver()._dispatcher)

    def test_never_raises_into_nova(self):
        driver = self._driver()
        # A malformed message must not escape the driver.
        driver.notify({}, {'payload': {'nova_object.name': 'X'}}, 'INFO',
                      None)

    def test_broken_consumer_plugin_fails_at_load(self):
        self.flags(consumers=['nope'], group='nova_ext_notifications')
        self.assertRaises(exception.PluginNotFound, self._driver)

    def test_attach_lines_reach_the_log_set_up_after(self):
        # Nova's parse_args builds the notifiers (rpc.init) before the
        # process sets up its logging.
        logs = self.useFixture(ext_fixtures.LoggingNotSetUp())
        self.flags(consumers=['test-recorder'],
                   group='nova_ext_notifications')
        self.flags(capture=True, group='nova_ext_index')
        self.addCleanup(db_writes.detach)
        self._driver()
        self._driver()
        path = logs.setup()
        self.assertTrue(startup_log.wait(10))
        with open(path) as f:
            lines = f.read().splitlines()
        for want in ("nova_ext notification driver attached; consumers: "
                     "['test-recorder']",
                     'nova_ext index change capture attached'):
            self.assertEqual(1, len([line for line in lines
                                     if want in line]), (want, lines))
