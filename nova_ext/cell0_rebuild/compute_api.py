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
"""The compute API nova_ext's rebuild runs Nova's controller with.

Nova's ``ServersController._rebuild`` validates the request (schemas per
microversion, policy including ``rebuild:trusted_certs``, the project
scoping that gives other projects a 404), maps exceptions to Nova's HTTP
errors and renders the response. nova_ext runs its own instance of that
controller whose compute API is this one: for a server that failed
scheduling in cell0 its ``rebuild`` prepares a new build request with
Nova's own checks and helpers and runs the flow (flow.py); for any other
server it is Nova's ``rebuild``, with Nova's answer.
"""

from nova import block_device
from nova.compute import api as compute_api
from nova.compute import power_state
from nova.compute import task_states
from nova.compute import utils as compute_utils
from nova.compute import vm_states
from nova import context as nova_context
from nova import exception as nova_exception
from nova.network import model as network_model
from nova import notifications
from nova import objects
from nova.pci import request as pci_request
from nova import utils
from nova.virt import hardware
from oslo_log import log as logging
from oslo_utils import excutils
import webob.exc

from nova_ext.cell0_rebuild import eligibility
from nova_ext.cell0_rebuild import flow
from nova_ext.cell0_rebuild import objects as ext_objects
from nova_ext.cell0_rebuild import quota
from nova_ext.seams.internals import compute_api as nova_internals

LOG = logging.getLogger(__name__)

_EXPECTED_ATTRS = ['metadata', 'system_metadata', 'flavor', 'info_cache',
                   'security_groups', 'numa_topology', 'pci_requests',
                   'trusted_certs', 'keypairs', 'device_metadata',
                   'vcpu_model', 'migration_context', 'resources']


class Cell0RebuildAPI(compute_api.API):
    """Nova's compute API, with ``rebuild`` able to rebuild from cell0."""

    def rebuild(self, context, instance, image_href, admin_password,
                files_to_inject=None, reimage_boot_volume=False, **kwargs):
        buried = self._buried(context, instance.uuid)
        if buried is None:
            return super().rebuild(
                context, instance, image_href, admin_password,
                files_to_inject=files_to_inject,
                reimage_boot_volume=reimage_boot_volume, **kwargs)
        LOG.info('Rebuilding %s from cell0', instance.uuid)
        build_request, spec, image, networks = self._prepare(
            context, buried, image_href, files_to_inject or [], kwargs)
        try:
            self._run(context, buried, build_request, spec, image,
                      admin_password, files_to_inject or [], networks)
        except flow.AlreadyRebuilding:
            raise webob.exc.HTTPConflict(explanation=(
                'Server %s is already being rebuilt.' % instance.uuid))
        except nova_exception.ConstraintNotMet:
            raise webob.exc.HTTPConflict(explanation=(
                'Server %s changed while it was being rebuilt; nothing was '
                'done.' % instance.uuid))
        except (nova_exception.InstanceNotFound,
                nova_exception.OverQuota):
            # Deleted meanwhile (Nova's 404), or Nova's quota (403).
            raise
        except Exception as e:
            # The flow undid its steps: the server is as it was, and the
            # caller may try again. Nova's controller admits only its
            # expected errors, so this is a 409, not a 503.
            raise webob.exc.HTTPConflict(explanation=(
                'Server %s could not be rebuilt from cell0 (%s: %s); it was '
                'left as it was and can be rebuilt again.'
                % (instance.uuid, type(e).__name__, e)))

    def _run(self, context, buried, build_request, spec, image,
             admin_password, files, networks):
        """The flow, then Nova's state change notification either way."""
        try:
            flow.run(context, buried, build_request, spec, image,
                     admin_password, files, networks, self.compute_task_api)
        except Exception:
            with excutils.save_and_reraise_exception():
                # Undone, but perhaps buried again as a new row.
                notifications.send_update_with_states(
                    context, buried.instance, vm_states.ERROR,
                    vm_states.ERROR, None, None, service='api')
            return
        # The server left cell0 without being deleted. Say so, as the
        # conductor does when a build request becomes an instance, so that
        # whatever follows notifications (the instance index, Searchlight,
        # billing) reads it again.
        shown = build_request.instance
        shown.tags = build_request.tags
        notifications.send_update_with_states(
            context, shown, vm_states.ERROR, vm_states.BUILDING, None,
            task_states.SCHEDULING, service='api')

    @staticmethod
    def _buried(context, instance_uuid):
        """The server as it is in cell0 if it may be rebuilt from there."""
        try:
            mapping = objects.InstanceMapping.get_by_instance_uuid(
                context, instance_uuid)
        except nova_exception.InstanceMappingNotFound:
            return None
        if not eligibility.in_cell0(mapping):
            return None
        with nova_context.target_cell(context, mapping.cell_mapping) as cctxt:
            try:
                instance = objects.Instance.get_by_uuid(
                    cctxt, instance_uuid, expected_attrs=_EXPECTED_ATTRS)
            except nova_exception.InstanceNotFound:
                return None
            fault = objects.InstanceFault.get_latest_for_instance(
                cctxt, instance_uuid)
            if not eligibility.rebuildable(instance, fault):
                return None
            bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(
                cctxt, instance_uuid)
            tags = objects.TagList.get_by_resource_id(cctxt, instance_uuid)
        return flow.Buried(instance, fault, bdms, tags, mapping)

    def _prepare(self, context, buried, image_href, files, kwargs):
        """Nova's rebuild checks, then the build request and request spec.

        Nothing is written: whatever is rejected here leaves the server
        as it was.
        """
        old = buried.instance
        # Nova's rebuild decorators, for a server that never ran.
        if old.locked and not context.is_admin:
            raise nova_exception.InstanceIsLocked(instance_uuid=old.uuid)
        if old.task_state is not None:
            raise nova_exception.InstanceInvalidState(
                attr='task_state', instance_uuid=old.uuid,
                state=old.task_state, method='rebuild')
        capture = ext_objects.BuildCapture.get_by_instance_uuid(
            context, old.uuid)
        if capture is None:
            raise webob.exc.HTTPConflict(explanation=(
                'Cannot rebuild server %s from cell0: its requested networks '
                'were not recorded when it was created (rebuild from cell0 '
                'was not enabled then).' % old.uuid))
        if capture.personality and not files:
            raise webob.exc.HTTPBadRequest(explanation=(
                'Cannot rebuild server %s from cell0: it was created with '
                'personality files, which are not kept and cannot be '
                'restored. Delete it and create it again.' % old.uuid))

        new = flow.copy_instance(context, old)
        self._apply_request(context, new, kwargs)
        image_id, image = nova_internals.get_image(self, context, image_href)
        auto_disk_config = kwargs.get('auto_disk_config')
        nova_internals.check_auto_disk_config(self, image, auto_disk_config)
        nova_internals.check_image_arch(self, image)
        flavor = new.get_flavor()
        bdms = flow.copy_bdms(buried.bdms, new.uuid)
        root_bdm = block_device.get_root_bdm(bdms)
        is_bfv = compute_utils.is_volume_backed_instance(context, old,
                                                         buried.bdms)
        self._root_image(context, new, root_bdm, is_bfv, image_id,
                         image_href)
        min_comp_ver = objects.service.get_minimum_version_all_cells(
            context, ['nova-compute'])
        nova_internals.checks_for_create_and_rebuild(
            self, context, image_id, image, flavor, new.metadata, files,
            root_bdm, min_comp_ver)

        image_meta = objects.ImageMeta.from_dict(image)
        affinity = hardware.get_pci_numa_policy_constraint(flavor, image_meta)
        pci_requests = pci_request.get_pci_requests_from_flavor(
            flavor, affinity_policy=affinity)
        networks = capture.requested_networks
        network_metadata, port_requests, level_params = (
            self.network_api.create_resource_requests(
                context, networks, pci_requests, affinity_policy=affinity))
        numa = hardware.numa_get_constraints(flavor, image_meta)
        kernel_id, ramdisk_id = nova_internals.handle_kernel_and_ramdisk(
            self, context, None, None, image)

        new.update(nova_internals.inherit_properties_from_image(
            self, image, auto_disk_config))
        if not is_bfv:
            new.image_ref = image_href
        new.kernel_id = kernel_id or ''
        new.ramdisk_id = ramdisk_id or ''
        new.numa_topology = numa
        new.pci_requests = pci_requests
        new.vm_state = vm_states.BUILDING
        new.task_state = task_states.SCHEDULING
        new.power_state = power_state.NOSTATE
        new.progress = 0
        new.info_cache = objects.InstanceInfoCache(
            instance_uuid=new.uuid, network_info=network_model.NetworkInfo())
        system_metadata = {k: v for k, v in new.system_metadata.items()
                           if not k.startswith(utils.SM_IMAGE_PROP_PREFIX)}
        system_metadata.update(utils.get_system_metadata_from_image(
            image, flavor))
        system_metadata['image_base_image_ref'] = image_id
        new.system_metadata = system_metadata

        quota.check(context, new, flavor)

        spec = objects.RequestSpec.get_by_instance_uuid(context, new.uuid)
        spec.image = image_meta
        spec.numa_topology = numa
        spec.pci_requests = pci_requests
        spec.is_bfv = is_bfv
        spec.requested_resources = list(port_requests or [])
        if level_params is not None:
            spec.request_level_params = level_params
        if network_metadata:
            spec.network_metadata = network_metadata
        if networks is not None:
            spec.requested_networks = networks
        spec.save()

        build_request = objects.BuildRequest(
            context, instance=new, instance_uuid=new.uuid,
            project_id=new.project_id, block_device_mappings=bdms,
            tags=flow.tag_list(new.uuid, buried.tags))
        return build_request, spec, image, networks

    def _apply_request(self, context, new, kwargs):
        """What the rebuild request changes, as Nova's rebuild applies it."""
        kwargs = dict(kwargs)
        kwargs.pop('preserve_ephemeral', None)
        if 'key_name' in kwargs:
            key_name = kwargs.pop('key_name')
            if key_name:
                # The caller's key pair, as in Nova's rebuild.
                key_pair = objects.KeyPair.get_by_name(
                    context, context.user_id, key_name)
                new.key_name = key_pair.name
                new.key_data = key_pair.public_key
                new.keypairs = objects.KeyPairList(objects=[key_pair])
            else:
                new.key_name = None
                new.key_data = None
                new.keypairs = objects.KeyPairList(objects=[])
        if 'trusted_certs' in kwargs:
            new.trusted_certs = nova_internals.retrieve_trusted_certs_object(
                context, kwargs.pop('trusted_certs'), rebuild=True)
        if 'hostname' in kwargs:
            new.hostname = kwargs.pop('hostname')
        new.update(kwargs)

    def _root_image(self, context, new, root_bdm, is_bfv, image_id,
                    image_href):
        """Point the root disk at the rebuild's image, where it can be."""
        if not is_bfv:
            if root_bdm is not None and root_bdm.source_type == 'image':
                root_bdm.image_id = image_id
            return
        if new.trusted_certs:
            raise nova_exception.CertificateValidationFailed(message=(
                'Image certificate validation is not supported for '
                'volume-backed servers.'))
        if root_bdm.source_type == 'image':
            # The volume is made from the image when the server is built.
            root_bdm.image_id = image_id
            return
        volume = self.volume_api.get(context, root_bdm.volume_id)
        original = volume.get('volume_image_metadata', {}).get('image_id')
        if original != image_href:
            raise nova_exception.ImageUnacceptable(
                image_id=image_href, reason=(
                    'Unable to rebuild with a different image for a '
                    'volume-backed server.'))
