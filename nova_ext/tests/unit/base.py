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
from oslo_config import fixture as config_fixture
from oslo_context import fixture as context_fixture
from oslotest import base

from nova_ext import conf
from nova_ext.index.marks import witness
from nova_ext.tests import fixtures as ext_fixtures
from nova_ext.tests import plugins as test_plugins


class TestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.conf = self.useFixture(config_fixture.Config(conf.CONF))
        # Nova's RequestContext stores itself as the thread's current one,
        # which oslo.log then prints: no test inherits another's.
        self.useFixture(context_fixture.ClearRequestContext())
        self.addCleanup(test_plugins.reset)
        # A list that catches up starts the process's witness, whose thread
        # reads the index named by the global config: left running, it
        # would read the next test's database while that test counts its
        # statements.
        self.addCleanup(witness.reset)

    def flags(self, group=None, **kwargs):
        self.conf.config(group=group, **kwargs)

    def install_test_plugins(self):
        self.useFixture(ext_fixtures.EntryPointsFixture())


class Clock(object):
    """A monotonic clock that moves only when a test sets ``now``."""

    def __init__(self, now=1000.0):
        self.now = now

    def __call__(self):
        return self.now
