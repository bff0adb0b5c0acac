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
"""A page's volumes brought up to date without reading anything.

The volumes read again for servers that changed are compared with Nova's
in nova_ext.tests.functional.test_index_parity; this is the case decided
before any query, so no driver is given.
"""

import types

from nova_ext.instance_list import index_reads
from nova_ext.tests.unit import base


class TestBringVolumes(base.TestCase):

    def test_none_of_the_pages_servers_changed(self):
        # The volumes as kept, the same object: what was worked out from
        # them (the servers with several) holds.
        volume = types.MappingProxyType({'volume_id': 'v1',
                                         'delete_on_termination': False})
        indexed = index_reads._Volumes({'a': (volume,), 'b': ()})
        brought = index_reads._bring_volumes(None, None, ['a', 'b'], indexed,
                                             frozenset({'c'}))
        self.assertIs(indexed, brought)
