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
"""``gc_freeze`` in the real cloud's uWSGI workers.

The cloud's nova.conf sets ``[nova_ext_instance_list]gc_freeze``: each
worker of nova_ext's nova-api freezes its objects after the first list it
renders, and its later answers are still the stock nova-api's, byte for
byte. The stock nova-api reads the same nova.conf and, without nova_ext's
filter in its pipeline, freezes nothing.
"""

import re

from nova_ext_tools.tests.deployment import base
from nova_ext_tools.tests.deployment import stream
from nova_ext_tools.tests.deployment import test_stream

URLS = ('/servers/detail?all_tenants=1&limit=50',
        '/servers?all_tenants=1&limit=50')
MARK = 'gc_freeze'


class TestGcFreeze(base.CloudTestCase):

    def _lines(self, name):
        """The lines of nova-api ``name``'s workers that froze."""
        return [line for line in self.nova_ext_lines('INFO', [name])
                if MARK in line]

    def _frozen(self, lines):
        """``{pid: objects frozen}`` of the workers that logged ``lines``."""
        found = {}
        for line in lines:
            words = line.split(': ', 1)[1].split(None, 3)
            found[words[2]] = int(re.search(r'(\d+) objects', line)[1])
        return found

    def test_workers_freeze_and_answer_as_nova(self):
        admin = self.connect('admin')
        lister = stream.Lister(admin, self.connect('admin', stock=True))
        counted = test_stream.counters_before(self)
        for _ in range(4):
            for url in URLS:
                same, answer, before, _after = lister.compare(url, 'latest')
                self.assertTrue(same, stream.first_difference(answer,
                                                              before))
        frozen = self._frozen(self._lines('nova-api'))
        # A frozen worker renders lists of a whole Nova loaded.
        self.assertTrue(frozen)
        self.assertTrue(all(n > 100000 for n in frozen.values()), frozen)
        # Its next answers too, whichever workers render them.
        for _ in range(4):
            for url in URLS:
                same, answer, before, _after = lister.compare(url, 'latest')
                self.assertTrue(same, stream.first_difference(answer,
                                                              before))
        now = test_stream.accounted_for(self, lister, counted)
        self.assertEqual(lister.sent,
                         now.get('rendered', 0) - counted.get('rendered', 0))
        # Once per worker (a worker rendering its first list meanwhile
        # froze since): no pid logs it twice.
        lines = self._lines('nova-api')
        self.assertEqual(len(self._frozen(lines)), len(lines))
        self.assertEqual([], self._lines('nova-api-stock'))
