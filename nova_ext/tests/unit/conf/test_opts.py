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
import io
import re

from oslo_config import cfg
from oslo_config import generator

from nova_ext.conf import opts
from nova_ext.tests.unit import base


class TestOptions(base.TestCase):

    def test_every_capability_off_by_default(self):
        conf = self.conf.conf
        self.assertEqual([], conf.nova_ext_api.handlers)
        self.assertEqual([], conf.nova_ext_notifications.consumers)
        self.assertEqual([], conf.nova_ext_scheduler.request_filters)
        self.assertEqual([], conf.nova_ext_compute_status.trait_callbacks)
        self.assertEqual([], conf.nova_ext_object_migrations.migrations)
        self.assertEqual('cells', conf.nova_ext_instance_list.driver)

    def test_groups_are_namespaced_and_registered(self):
        for group, group_opts in opts.list_opts():
            self.assertTrue(group.name.startswith('nova_ext_'), group.name)
            for opt in group_opts:
                self.assertTrue(opt.help.strip(), opt.name)
                self.assertIn(opt.name, self.conf.conf[group.name])

    def test_no_option_is_mutable(self):
        # oslo.config mutates options only where the process calls
        # mutate_config_files (an oslo.service SIGHUP). Nothing does so in
        # nova-api, which reads most of nova_ext's options; an option
        # marked mutable would promise a change at run time that never
        # comes. One read by a service that reloads may be marked, with a
        # test that the reload changes it.
        mutable = ['%s.%s' % (group.name, opt.name)
                   for group, group_opts in opts.list_opts()
                   for opt in group_opts if opt.mutable]
        self.assertEqual([], mutable)

    def test_generator_prints_every_option(self):
        out = io.StringIO()
        conf = self._generator_conf()
        generator.generate(conf, output_file=out)
        text = out.getvalue()
        for group, group_opts in opts.list_opts():
            self.assertIn('[%s]' % group.name, text)
            for opt in group_opts:
                self.assertRegex(text, r'(?m)^#%s =' % re.escape(opt.name))

    def _generator_conf(self):
        conf = cfg.ConfigOpts()
        generator.register_cli_opts(conf)
        conf(['--namespace', 'nova_ext'])
        return conf
