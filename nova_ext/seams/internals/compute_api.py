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
"""``nova.compute.api.API``: the protected helpers of Nova's rebuild.

Rebuild from cell0 prepares a new build request with the checks and
helpers Nova's own ``rebuild`` and ``create`` use, so that a request Nova
would reject is rejected the same way, with the same error. They are
methods of the compute API nova_ext's rebuild runs
(``nova_ext.cell0_rebuild.compute_api.Cell0RebuildAPI``, a subclass of
``nova.compute.api.API``), which passes itself as ``api``.

The contract test is
``nova_ext.tests.unit.seams.test_internals_compute_api``.
"""


from nova.compute import api as compute_api

from nova_ext.seams import internals


def _check(name):
    internals.check('nova.compute.api.API.%s' % name)


def get_image(api, context, image_href):
    """``(image id, image dict)`` of ``image_href``, from Glance."""
    _check('_get_image')
    return api._get_image(context, image_href)


def check_auto_disk_config(api, image, auto_disk_config):
    """Raise Nova's error if the image does not allow ``auto_disk_config``."""
    _check('_check_auto_disk_config')
    api._check_auto_disk_config(image=image,
                                auto_disk_config=auto_disk_config)


def check_image_arch(api, image):
    """Raise Nova's error if the image names an unknown architecture."""
    _check('_check_image_arch')
    api._check_image_arch(image=image)


def checks_for_create_and_rebuild(api, context, image_id, image, flavor,
                                  metadata, files_to_inject, root_bdm,
                                  min_comp_ver):
    """Nova's checks common to create and rebuild.

    Metadata and injected-file quotas, a bootable image, the image against
    the flavor (sizes, NUMA, ...), the computes' support for a sound model.
    """
    _check('_checks_for_create_and_rebuild')
    api._checks_for_create_and_rebuild(
        context, image_id, image, flavor, metadata, files_to_inject,
        root_bdm, min_comp_ver)


def handle_kernel_and_ramdisk(api, context, kernel_id, ramdisk_id, image):
    """``(kernel id, ramdisk id)``: those given, else the image's."""
    _check('_handle_kernel_and_ramdisk')
    return api._handle_kernel_and_ramdisk(context, kernel_id, ramdisk_id,
                                          image)


def inherit_properties_from_image(api, image, auto_disk_config):
    """The instance fields Nova takes from the image's properties."""
    _check('_inherit_properties_from_image')
    return api._inherit_properties_from_image(image, auto_disk_config)


def retrieve_trusted_certs_object(context, trusted_certs, rebuild=False):
    """Nova's ``TrustedCerts`` object for a request's ``trusted_certs``."""
    _check('_retrieve_trusted_certs_object')
    return compute_api.API._retrieve_trusted_certs_object(
        context, trusted_certs, rebuild=rebuild)
