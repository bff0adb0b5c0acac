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
"""Nova's server view builder, with request specs and volumes read lightly.

``_list_view`` below is Nova 34's, line for line, but for where the request
specs come from (request_specs.py); the block device mappings come from
volumes.py. ``_list_view`` is the one method of Nova's view that nova_ext
carries a copy of; the version gate of the instance list
(``nova_ext.compat.TESTED_NOVA``), a unit test comparing it with Nova's
source and the parity tests at every microversion hold it to Nova's.
"""

import functools

from nova.api.openstack import api_version_request
from nova.api.openstack.compute.views import servers as views_servers
from nova.objects import virtual_interface

from nova_ext.instance_list import request_specs
from nova_ext.instance_list import volumes


class ViewBuilder(views_servers.ViewBuilder):

    _get_instance_bdms_in_multiple_cells = staticmethod(
        volumes.by_instance_uuid)

    def _list_view(self, func, request, servers, coll_name, show_extra_specs,
                   show_extended_attr=None, show_host_status=None,
                   show_sec_grp=False, bdms=None, cell_down_support=False):
        req_specs = None
        req_specs_dict = {}
        sched_hints_dict = {}
        if api_version_request.is_supported(request, '2.96'):
            context = request.environ['nova.context']
            instance_uuids = [s.uuid for s in servers]
            req_specs = request_specs.get_by_instance_uuids(
                context, instance_uuids)
            req_specs_dict.update({req.instance_uuid: req.availability_zone
                                   for req in req_specs
                                   if req.availability_zone is not None})
            if api_version_request.is_supported(request, '2.100'):
                sched_hints_dict.update({
                    req.instance_uuid: req.scheduler_hints
                    for req in req_specs
                    if req.scheduler_hints is not None})

        server_list = [
            func(request, server,
                 show_extra_specs=show_extra_specs,
                 show_extended_attr=show_extended_attr,
                 show_host_status=show_host_status,
                 show_sec_grp=show_sec_grp, bdms=bdms,
                 cell_down_support=cell_down_support,
                 provided_az=req_specs_dict.get(
                     server.uuid, views_servers.AZ_NOT_IN_REQUEST_SPEC),
                 provided_sched_hints=sched_hints_dict.get(
                     server.uuid,
                     views_servers.SCHED_HINTS_NOT_IN_REQUEST_SPEC)
                 )["server"]
            for server in servers
            if server.uuid != virtual_interface.FAKE_UUID]
        servers_links = self._get_collection_links(request,
                                                   servers,
                                                   coll_name)
        servers_dict = dict(servers=server_list)

        if servers_links:
            servers_dict["servers_links"] = servers_links

        return servers_dict


@functools.cache
def builder():
    """The ViewBuilder of this process, made on first use."""
    return ViewBuilder()
