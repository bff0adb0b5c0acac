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
"""The rules by which nova-api hands lists to Nova, at their thresholds."""

from nova_ext.index.upkeep import rules
from nova_ext.tests.unit import base


class TestRules(base.TestCase):

    def test_schema(self):
        self.assertIsNone(rules.schema('0009', '0009'))
        behind = ('the index schema is at revision 0008, this nova_ext '
                  'needs 0009: run "nova-ext-manage index db_sync"')
        self.assertEqual(behind, rules.schema('0008', '0009'))
        self.assertEqual(behind, rules.schema('0008', '0009',
                                              ['0008', '0009']))
        self.assertIn('revision None', rules.schema(None, '0009', ['0009']))
        self.assertIn('db_sync', rules.schema(None, '0009', ['0009']))
        # A later nova_ext's revision: this host's is the one to upgrade.
        self.assertEqual(
            'the index schema is at revision 0010, which this nova_ext (at '
            '0009) does not know: upgrade nova_ext on this host',
            rules.schema('0010', '0009', ['0008', '0009']))

    def test_unrecorded_lag_up_to_max_lag(self):
        self.assertIsNone(rules.unrecorded_lag(0.0, 0.0))
        self.assertIsNone(rules.unrecorded_lag(10.0, 10.0))
        self.assertEqual('changes unrecorded for 12.0 s (max_lag 10.0 s)',
                         rules.unrecorded_lag(12.0, 10.0))

    def test_any_unrecorded_change(self):
        self.assertIsNone(rules.unrecorded(0))
        self.assertEqual('1 captured changes not recorded in the index yet',
                         rules.unrecorded(1))

    def test_pending_up_to_catch_up_limit(self):
        self.assertIsNone(rules.pending(0, 0))
        self.assertIsNone(rules.pending(200, 200))
        self.assertEqual('250 marks pending, catch_up_limit 200',
                         rules.pending(250, 200))
        self.assertEqual('at least 201 marks pending, catch_up_limit 200',
                         rules.pending(201, 200, at_least=True))
