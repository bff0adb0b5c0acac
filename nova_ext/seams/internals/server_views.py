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
"""``nova.api.openstack.compute.views.servers``: Nova's server view builder.

nova_ext renders server lists with Nova's own ``ViewBuilder``, changing
four things it reads, which Nova's class offers no way to change but its
private methods: where a page's volumes come from
(``_get_instance_bdms_in_multiple_cells``), where its request specs come
from (in ``_list_view``, of which :class:`ViewBuilder` carries a copy,
Nova 34's line for line but for that call), whether Nova adds
``host_status`` and security groups to a page's documents
(``_add_host_status``, ``_add_security_grps``), and where those security
groups come from (in ``_add_security_grps``, also a copy but for that
call). :class:`ViewBuilder` overrides those and asks its own public
methods, which a subclass changes. What nova_ext relies on of Nova's view
of a list without details is :data:`LIST_SHOWS_NO_SPECS`; of its
``detail``, the decisions it makes by policy (:func:`detail_decisions`)
and how it decides each server's ``host_status``
(:func:`host_statuses`).

The contract test is
``nova_ext.tests.unit.seams.test_internals_server_views``.
"""


from nova.api.openstack import api_version_request
from nova.api.openstack.compute.views import servers as views_servers
from nova import objects
from nova.objects import virtual_interface
from nova.policies import extended_server_attributes as esa_policies
from nova.policies import servers as servers_policies

from nova_ext.seams import internals
from nova_ext.seams.internals import security_group_api

POINT = 'nova.api.openstack.compute.views.servers.ViewBuilder'

#: Whether Nova's view of a list without details (``index``, each server
#: by ``basic``) shows nothing of the request specs that ``_list_view``
#: reads for every page from microversion 2.96: ``basic`` takes the zone
#: and hints as arguments and leaves them out. True on the tested Novas.
LIST_SHOWS_NO_SPECS = True


def _check():
    internals.check(POINT)


class ViewBuilder(views_servers.ViewBuilder):
    """Nova's server view builder, with what nova_ext changes in methods.

    As it is, it renders as Nova's does; a subclass overrides
    :meth:`read_volumes`, :meth:`request_specs`, :meth:`adds_to_page` and
    :meth:`security_group_bindings`.

    :raises UnsupportedNovaVersion: when made on a Nova nova_ext was not
        tested with.
    """

    def __init__(self):
        _check()
        super().__init__()

    def read_volumes(self, ctxt, instance_uuids):
        """The block device mappings of a page's instances.

        :returns: ``{instance uuid: [mappings]}``, each mapping a dict (or
            object) with ``volume_id`` and ``delete_on_termination``.
        """
        return views_servers.ViewBuilder._get_instance_bdms_in_multiple_cells(
            ctxt, instance_uuids)

    def request_specs(self, context, instance_uuids):
        """As ``RequestSpec.get_by_instance_uuids``, for the view.

        The view reads ``instance_uuid``, ``availability_zone`` and
        ``scheduler_hints`` of each.
        """
        return objects.RequestSpec.get_by_instance_uuids(
            context, instance_uuids)

    def adds_to_page(self, servers):
        """Whether Nova adds host_status and security groups to ``servers``.

        :param servers: the documents of a detailed page.
        """
        return True

    def security_group_bindings(self, context, servers):
        """As ``get_instances_security_groups_bindings``, for the view.

        :param servers: the documents of a detailed page.
        :returns: ``{server uuid: [group]}``.
        """
        return security_group_api.bindings(context, servers)

    def _get_instance_bdms_in_multiple_cells(self, ctxt, instance_uuids):
        return self.read_volumes(ctxt, instance_uuids)

    def _add_host_status(self, servers, instances, unknown_only=False):
        if self.adds_to_page(servers):
            super()._add_host_status(servers, instances,
                                     unknown_only=unknown_only)

    def _add_security_grps(self, request, servers, instances):
        if self.adds_to_page(servers):
            self._add_security_grps_copy(request, servers, instances)

    def _add_security_grps_copy(self, request, servers, instances):
        if not len(servers):
            return

        context = request.environ['nova.context']
        sg_instance_bindings = (
            self.security_group_bindings(
                context, servers))
        for server in servers:
            groups = sg_instance_bindings.get(server['id'])
            if groups:
                server['security_groups'] = groups

    def _list_view(self, func, request, servers, coll_name, show_extra_specs,
                   show_extended_attr=None, show_host_status=None,
                   show_sec_grp=False, bdms=None, cell_down_support=False):
        req_specs = None
        req_specs_dict = {}
        sched_hints_dict = {}
        if api_version_request.is_supported(request, '2.96'):
            context = request.environ['nova.context']
            instance_uuids = [s.uuid for s in servers]
            req_specs = self.request_specs(
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


def host_status_unknown_only(view_builder, context):
    """What ``host_status`` the page's documents show to ``context``.

    Nova's ``_get_host_status_unknown_only``: None when policy shows none,
    True when only ``UNKNOWN``, False when any.

    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    _check()
    return view_builder._get_host_status_unknown_only(context)


def detail_decisions(view_builder, request):
    """What Nova's ``detail`` decides by policy for ``request``'s page.

    Nova's statements: whether the documents show the flavor's extra
    specs, whether they show the extended server attributes, and what
    ``host_status`` they get (:func:`host_status_unknown_only`'s answer;
    None before microversion 2.16).

    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    _check()
    context = request.environ['nova.context']
    if api_version_request.is_supported(request, '2.47'):
        show_extra_specs = context.can(
            servers_policies.SERVERS % 'show:flavor-extra-specs',
            fatal=False)
    else:
        show_extra_specs = False
    show_extended_attr = context.can(
        esa_policies.BASE_POLICY_NAME, fatal=False)
    unknown_only = None
    if api_version_request.is_supported(request, '2.16'):
        unknown_only = view_builder._get_host_status_unknown_only(context)
    return show_extra_specs, show_extended_attr, unknown_only


def host_statuses(view_builder, firsts):
    """The ``host_status`` of a page's servers, by their host.

    Nova's view has ``compute.API.get_instances_host_statuses`` decide
    each server's, which decides once per host name: by the services of
    the first of the page's servers on that host, and ``NONE`` for a
    server on none. So every server of a page gets the status that the
    first server on its host gets; the others need not be asked about.

    :param firsts: ``{host: the first of the page's servers on it}``,
        each an Instance with its services; a falsy host (None, '') too.
    :returns: ``{host: status}``.
    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    _check()
    found = view_builder.compute_api.get_instances_host_statuses(
        list(firsts.values()))
    return {host: found[instance.uuid] for host, instance in firsts.items()}


def project_id_in_url(view_builder, request):
    """The project id in the request's URL (the links keep it), or ''.

    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    _check()
    return view_builder._get_project_id(request)
