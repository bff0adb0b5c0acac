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
import os

import fixtures

from nova_ext.api import paste_config
from nova_ext.tests.functional import fixtures as func_fixtures
from nova_ext.tests.unit import base


class TestPasteConfig(base.TestCase):

    def setUp(self):
        super().setUp()
        with open(func_fixtures.nova_api_paste_ini()) as f:
            self.nova_ini = f.read()

    def _pipelines(self, text):
        return [line.split('=', 1)[1].split() for line in text.splitlines()
                if line.startswith('keystone =')]

    def test_filter_goes_last_before_the_app_after_the_context(self):
        text = paste_config.enable(self.nova_ini)
        pipelines = self._pipelines(text)
        self.assertEqual(2, len(pipelines))
        for words in pipelines:
            self.assertEqual(['nova_ext', 'osapi_compute_app_v21'],
                             words[-2:])
            self.assertLess(words.index('keystonecontext'),
                            words.index('nova_ext'))
        self.assertIn('[filter:nova_ext]\n%s\n' % paste_config.FACTORY, text)

    def test_idempotent_and_only_adds(self):
        once = paste_config.enable(self.nova_ini)
        self.assertEqual(once, paste_config.enable(once))
        kept = [line for line in self.nova_ini.splitlines()
                if not line.startswith('keystone =')]
        for line in kept:
            self.assertIn(line, once.splitlines())

    def test_refuses_a_file_without_compute_pipeline(self):
        self.assertRaises(ValueError, paste_config.enable,
                          '[app:x]\npaste.app_factory = a:b\n')

    def test_main_edits_in_place(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, 'p.ini')
        with open(path, 'w') as f:
            f.write(self.nova_ini)
        self.assertEqual(0, paste_config.main([path]))
        self.assertEqual(0, paste_config.main([path]))
        with open(path) as f:
            self.assertEqual(paste_config.enable(self.nova_ini), f.read())
        self.assertEqual(0, paste_config.main(['--remove', path]))
        with open(path) as f:
            self.assertEqual(self.nova_ini, f.read())
        # Usage errors: argparse's.
        self.assertRaises(SystemExit, paste_config.main, [])

    def test_remove_gives_back_novas_file(self):
        enabled = paste_config.enable(self.nova_ini)
        removed = paste_config.disable(enabled)
        self.assertEqual(self.nova_ini, removed)
        self.assertEqual(removed, paste_config.disable(removed))
        self.assertNotIn('nova_ext', removed)

    def test_remove_keeps_what_the_operator_added(self):
        enabled = paste_config.enable(self.nova_ini).replace(
            'keystonecontext nova_ext', 'keystonecontext nova_ext mine')
        removed = paste_config.disable(enabled + '[filter:mine]\nx = y\n')
        self.assertIn('keystonecontext mine osapi_compute_app_v21', removed)
        self.assertTrue(removed.endswith('\n[filter:mine]\nx = y\n'))
        self.assertNotIn('nova_ext', removed)
