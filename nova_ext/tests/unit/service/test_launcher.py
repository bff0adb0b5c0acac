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
"""What a service's master does on SIGHUP, in one process.

The services themselves, signals and all, run as processes in
``nova_ext.tests.functional.test_services``.
"""

import logging
from logging import handlers
import os

import fixtures

from nova_ext.service import launcher
from nova_ext.tests.unit import base


class TestReloaded(base.TestCase):

    def test_logs_what_changed_and_reopens_a_moved_log_file(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'service.log')
        watched = handlers.WatchedFileHandler(path)
        root = logging.getLogger()
        root.addHandler(watched)
        self.addCleanup(watched.close)
        self.addCleanup(root.removeHandler, watched)
        log = self.useFixture(fixtures.FakeLogger(
            name=launcher.__name__, level=logging.INFO))
        os.rename(path, path + '.1')
        launcher._reloaded('nova-ext-test', None, {
            (None, 'debug'): (False, True),
            ('nova_ext_index', 'query_timeout'): (1, 2)})
        # Reopened before anything was written to it.
        self.assertTrue(os.path.exists(path))
        self.assertIn('nova-ext-test reloaded its configuration on SIGHUP '
                      '(changed: DEFAULT.debug, nova_ext_index.query_timeout)'
                      '; the worker restarts with it', log.output)

    def test_nothing_changed(self):
        log = self.useFixture(fixtures.FakeLogger(
            name=launcher.__name__, level=logging.INFO))
        launcher._reloaded('nova-ext-test', None, {})
        self.assertIn('(changed: none)', log.output)
