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

from nova_ext.instance_list.render import neutron_answers
from nova_ext.tests.unit import base


class TestAnswers(base.TestCase):

    def test_given_only_at_the_epoch_asked_at(self):
        answers = neutron_answers.Answers(2)
        answers.put('t', ['s1', 's2'], 3, {'s1': [{'name': 'default'}]})
        self.assertEqual({'s1': [{'name': 'default'}]},
                         answers.get('t', ['s1', 's2'], 3))
        self.assertIsNone(answers.get('t', ['s1', 's2'], 4))
        self.assertIsNone(answers.get('t', ['s2', 's1'], 3))
        self.assertIsNone(answers.get('other', ['s1', 's2'], 3))
        # Asked again at a later epoch: that answer, at that epoch only.
        answers.put('t', ['s1', 's2'], 4, {})
        self.assertIsNone(answers.get('t', ['s1', 's2'], 3))
        self.assertEqual({}, answers.get('t', ['s1', 's2'], 4))

    def test_least_recently_used_dropped_first(self):
        answers = neutron_answers.Answers(2)
        answers.put('t', ['a'], 1, {'a': []})
        answers.put('t', ['b'], 1, {'b': []})
        answers.get('t', ['a'], 1)
        answers.put('t', ['c'], 1, {'c': []})
        self.assertIsNotNone(answers.get('t', ['a'], 1))
        self.assertIsNone(answers.get('t', ['b'], 1))
        self.assertIsNotNone(answers.get('t', ['c'], 1))
        self.assertEqual({'a': [], 'c': []},
                         answers.known('t', ['a', 'b', 'c'], 1))

    def test_known_from_the_token_s_pages_at_the_epoch(self):
        answers = neutron_answers.Answers(4)
        web, db = [{'name': 'web'}], [{'name': 'db'}]
        answers.put('t', ['s1', 's2'], 1, {'s1': web})
        answers.put('t', ['s3'], 2, {'s3': db})
        answers.put('u', ['s4'], 1, {'s4': db})
        answers.put('t', ['s5', 's1'], 1, {'s5': db, 's1': db})
        # s2's page showed it with no group; the most recent page's s1.
        self.assertEqual({'s1': db, 's2': None, 's5': db},
                         answers.known('t', ['s1', 's2', 's3', 's4', 's5',
                                             's6'], 1))
        self.assertEqual({}, answers.known('t', ['s1'], 3))
