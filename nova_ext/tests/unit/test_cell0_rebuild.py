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
"""Rebuild from cell0: which faults qualify, and the Nova it was written for.

nova_ext runs Nova's own controller and compute API helpers; these tests
fail when Nova changes what they rely on, before any server does.
"""

import inspect

from nova.api.openstack.compute import servers as nova_servers
from nova.compute import api as compute_api
from nova.conductor import api as conductor_api
from nova.db.main import api as main_db
from nova import exception as nova_exception
from nova.objects import instance_mapping
import testtools

from nova_ext.cell0_rebuild import eligibility


def _params(func):
    return list(inspect.signature(func).parameters)


class TestEligibility(testtools.TestCase):

    def test_faults(self):
        cases = [
            (nova_exception.NoValidHost(reason=''), True),
            (nova_exception.NoValidHost(
                reason='There are not enough hosts available.'), True),
            (nova_exception.TooManyInstances(
                overs='ram', req=1, used=2, allowed=2), False),
            (nova_exception.MaxRetriesExceeded(reason='3 tries'), False),
            (nova_exception.InstanceNotFound(instance_id='x'), False),
        ]
        for exc, expected in cases:
            self.assertEqual(expected, eligibility.failed_for_resources(
                exc.format_message()), exc.format_message())
        self.assertFalse(eligibility.failed_for_resources(None))
        self.assertFalse(eligibility.failed_for_resources(''))


class TestNovaContract(testtools.TestCase):
    """What nova_ext calls in Nova, as Nova 34 defines it."""

    def test_controller(self):
        ctrl = nova_servers.ServersController
        self.assertEqual(['self', 'req', 'id', 'body'],
                         _params(inspect.unwrap(ctrl._rebuild)))
        self.assertIn('rebuild', ctrl.wsgi_actions)
        self.assertEqual(['self', 'requested_networks'],
                         _params(ctrl._get_requested_networks))

    def test_compute_api(self):
        api = compute_api.API
        self.assertEqual(
            ['self', 'context', 'instance', 'image_href', 'admin_password',
             'files_to_inject', 'reimage_boot_volume', 'kwargs'],
            _params(inspect.unwrap(api.rebuild)))
        self.assertEqual(
            ['self', 'context', 'image_id', 'image', 'flavor', 'metadata',
             'files_to_inject', 'root_bdm', 'min_comp_ver', 'validate_numa'],
            _params(api._checks_for_create_and_rebuild))
        self.assertEqual(['context', 'trusted_certs', 'rebuild'],
                         _params(api._retrieve_trusted_certs_object))
        for name in ('_get_image', '_check_auto_disk_config',
                     '_check_image_arch', '_inherit_properties_from_image',
                     '_handle_kernel_and_ramdisk'):
            self.assertTrue(callable(getattr(api, name)), name)

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
