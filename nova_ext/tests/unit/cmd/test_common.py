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
"""What nova_ext's commands share: ``--version``."""

import contextlib
import io

from nova_ext.cmd import common
from nova_ext.tests.unit import base


class TestVersion(base.TestCase):

    def test_version_exits_0_printing_nova_exts(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            raised = self.assertRaises(
                SystemExit, common.exit_on_version, 'nova-ext-test',
                ['--config-file', 'nova.conf', '--version'])
        self.assertEqual(0, raised.code)
        self.assertEqual(common.version(), out.getvalue().strip())

    def test_anything_else_is_left_to_oslo_config(self):
        common.exit_on_version('nova-ext-test',
                               ['--config-file', 'nova.conf', '--debug'])
