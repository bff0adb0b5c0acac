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
"""Contract: the signs of nova-compute that nova_ext reads in Nova."""

import importlib.util

import fixtures
from nova.db.main import api as main_db_api
from nova.objects import base as nova_objects_base

from nova_ext import exception
from nova_ext.seams.internals import compute_service
from nova_ext.tests import fixtures as ext_fixtures
from nova_ext.tests.unit import base


class TestComputeService(base.TestCase):

    def test_nova_compute_sets_itself_up_as_expected(self):
        # What is_nova_compute() watches for: nova-compute's main turns off
        # database access and sends objects to the conductor before it
        # creates its service. If Nova changes that, this fails. (Read, not
        # imported: importing it patches the process for nova-compute.)
        path = importlib.util.find_spec('nova.cmd.compute').origin
        with open(path) as f:
            source = f.read().split('\ndef main():', 1)[1]
        disable = source.index('nova.db.main.api.DISABLE_DB_ACCESS = True')
        indirection = source.index(
            'objects_base.NovaObject.indirection_api = '
            'conductor_rpcapi.ConductorAPI()')
        create = source.index('service.Service.create(')
        self.assertLess(max(disable, indirection), create)
        self.assertIsNone(nova_objects_base.NovaObject.indirection_api)
        self.assertFalse(compute_service.is_nova_compute())

    def test_the_names_read(self):
        self.assertIs(False, main_db_api.DISABLE_DB_ACCESS)
        self.useFixture(fixtures.MonkeyPatch(
            'nova.db.main.api.DISABLE_DB_ACCESS', True))
        self.assertFalse(compute_service.is_nova_compute())
        self.useFixture(fixtures.MonkeyPatch(
            'nova.objects.base.NovaObject.indirection_api', object()))
        self.assertTrue(compute_service.is_nova_compute())

    def test_refused_on_untested_nova(self):
        self.useFixture(ext_fixtures.UntestedNova())
        self.assertRaises(exception.UnsupportedNovaVersion,
                          compute_service.is_nova_compute)
