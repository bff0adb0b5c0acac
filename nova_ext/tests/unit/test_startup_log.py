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
"""The attach lines reach the log whenever the process sets it up."""

import logging as std_logging

import fixtures
from oslo_log import log as logging

from nova_ext import startup_log
from nova_ext.tests import fixtures as ext_fixtures
from nova_ext.tests.unit import base

LOG = logging.getLogger(__name__)


def _lines(path, *wanted):
    with open(path) as f:
        return [line for line in f.read().splitlines()
                if any(w in line for w in wanted)]


class TestInfo(base.TestCase):

    def test_logged_at_once_when_logging_is_set_up(self):
        logger = self.useFixture(fixtures.FakeLogger(level=std_logging.INFO))
        startup_log.info(LOG, 'nova_ext test attached; %s', 'now')
        self.assertIn('nova_ext test attached; now', logger.output)
        self.assertIsNone(startup_log._THREAD)

    def test_held_until_oslo_log_setup_then_logged_once_in_order(self):
        logs = self.useFixture(ext_fixtures.LoggingNotSetUp())
        startup_log.info(LOG, 'nova_ext test attached; %s', 'first')
        startup_log.info(LOG, 'nova_ext test attached; second')
        path = logs.setup()
        self.assertTrue(startup_log.wait(10))
        got = _lines(path, 'nova_ext test attached')
        self.assertEqual(2, len(got), got)
        self.assertIn('INFO %s [-] nova_ext test attached; first'
                      % __name__, got[0])
        self.assertIn('nova_ext test attached; second', got[1])
        # Held no more: the next line goes straight to the log.
        startup_log.info(LOG, 'nova_ext test attached; third')
        self.assertIsNone(startup_log._THREAD)
        self.assertEqual(3, len(_lines(path, 'nova_ext test attached')))

    def test_the_thread_ends_in_a_process_that_sets_up_no_logging(self):
        self.useFixture(ext_fixtures.LoggingNotSetUp())
        self.useFixture(fixtures.MonkeyPatch(
            'nova_ext.startup_log.WAIT', 0.0))
        startup_log.info(LOG, 'nova_ext test attached; unseen')
        self.assertTrue(startup_log.wait(10))
