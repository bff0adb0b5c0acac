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
"""Contract: the protected helpers of Nova's compute API nova_ext calls.

Each internals function is called with an API autospecced from Nova's
class, so a call that no longer binds to Nova's signature fails here.
"""

import inspect
from unittest import mock

from nova.compute import api as compute_api

from nova_ext.cell0_rebuild import compute_api as cell0_api
from nova_ext import exception
from nova_ext.seams.internals import compute_api as api_internals
from nova_ext.tests import fixtures as ext_fixtures
from nova_ext.tests.unit import base


def _params(func):
    return list(inspect.signature(func).parameters)


class TestComputeAPI(base.TestCase):
    """What nova_ext calls in Nova, as Nova 34 defines it."""

    def setUp(self):
        super().setUp()
        self.api = mock.create_autospec(compute_api.API, instance=True)

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

    def test_signatures(self):
        api = compute_api.API
        self.assertEqual(['self', 'context', 'image_href'],
                         _params(api._get_image))
        self.assertEqual(['self', 'instance', 'image', 'auto_disk_config'],
                         _params(api._check_auto_disk_config))
        self.assertEqual(['self', 'image'], _params(api._check_image_arch))
        self.assertEqual(['self', 'context', 'kernel_id', 'ramdisk_id',
                          'image'],
                         _params(api._handle_kernel_and_ramdisk))
        self.assertEqual(['self', 'image', 'auto_disk_config'],
                         _params(api._inherit_properties_from_image))
        self.assertIsInstance(
            inspect.getattr_static(api, '_retrieve_trusted_certs_object'),
            staticmethod)

    def test_calls_bind_to_novas_methods(self):
        api = self.api
        api._get_image.return_value = ('id', {})
        self.assertEqual(('id', {}),
                         api_internals.get_image(api, 'ctx', 'href'))
        api._get_image.assert_called_once_with('ctx', 'href')
        api_internals.check_auto_disk_config(api, {}, True)
        api._check_auto_disk_config.assert_called_once_with(
            image={}, auto_disk_config=True)
        api_internals.check_image_arch(api, {})
        api._check_image_arch.assert_called_once_with(image={})
        api_internals.checks_for_create_and_rebuild(
            api, 'ctx', 'id', {}, 'flavor', {}, [], None, 66)
        api._checks_for_create_and_rebuild.assert_called_once_with(
            'ctx', 'id', {}, 'flavor', {}, [], None, 66)
        api_internals.handle_kernel_and_ramdisk(api, 'ctx', None, None, {})
        api._handle_kernel_and_ramdisk.assert_called_once_with(
            'ctx', None, None, {})
        api_internals.inherit_properties_from_image(api, {}, None)
        api._inherit_properties_from_image.assert_called_once_with({}, None)
        with mock.patch.object(compute_api.API,
                               '_retrieve_trusted_certs_object',
                               autospec=True) as retrieve:
            api_internals.retrieve_trusted_certs_object('ctx', ['c'],
                                                        rebuild=True)
        retrieve.assert_called_once_with('ctx', ['c'], rebuild=True)

    def test_subclass_overrides_only_rebuild(self):
        # A method of nova_ext's with the name of one of Nova's would
        # change what Nova's own code calls.
        ours = {name for name, value in vars(cell0_api.Cell0RebuildAPI)
                .items() if callable(value) or isinstance(value,
                                                          staticmethod)}
        self.assertEqual({'rebuild'},
                         {name for name in ours
                          if hasattr(compute_api.API, name)})

    def test_refused_on_untested_nova(self):
        self.useFixture(ext_fixtures.UntestedNova())
        calls = [
            (api_internals.get_image, (self.api, 'ctx', 'href')),
            (api_internals.check_auto_disk_config, (self.api, {}, True)),
            (api_internals.check_image_arch, (self.api, {})),
            (api_internals.checks_for_create_and_rebuild,
             (self.api, 'ctx', 'id', {}, 'flavor', {}, [], None, 66)),
            (api_internals.handle_kernel_and_ramdisk,
             (self.api, 'ctx', None, None, {})),
            (api_internals.inherit_properties_from_image,
             (self.api, {}, None)),
            (api_internals.retrieve_trusted_certs_object, ('ctx', ['c'])),
        ]
        for func, args in calls:
            e = self.assertRaises(exception.UnsupportedNovaVersion, func,
                                  *args)
            self.assertIn('nova.compute.api.API._', str(e))
        self.assertEqual([], self.api.method_calls)
