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
"""The Nova the rebuild flow was written for.

The flow casts Nova's conductor and writes Nova's databases; these tests
fail when Nova changes what it relies on, before any server does.
"""

import inspect

from nova.conductor import api as conductor_api
from nova.db.main import api as main_db
from nova.objects import instance_mapping
import testtools


def _params(func):
    return list(inspect.signature(func).parameters)


class TestNovaContract(testtools.TestCase):
    """What nova_ext calls in Nova, as Nova 34 defines it."""

    def test_conductor_and_database(self):
        self.assertEqual(
            ['self', 'context', 'build_requests', 'request_spec', 'image',
             'admin_password', 'injected_files', 'requested_networks',
             'block_device_mapping', 'tags'],
            _params(conductor_api.ComputeTaskAPI.schedule_and_build_instances))
        self.assertEqual(['context', 'instance_uuid', 'constraint',
                          'hard_delete'],
                         _params(inspect.unwrap(main_db.instance_destroy)))

    def test_mapping_save_never_clears_the_cell(self):
        # Why flow.map_to writes the mapping itself.
        updates = instance_mapping.InstanceMapping._update_with_cell_id(
            instance_mapping.InstanceMapping(), {'cell_mapping': None})
        self.assertNotIn('cell_id', updates)
