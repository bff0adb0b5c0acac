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
specs come from (request_specs.py); the block device mappings of a page
come from the instance index (``volumes_from``). ``_list_view`` is the one
method of Nova's view that nova_ext carries a copy of; the version gate of
the instance list (``nova_ext.compat.TESTED_NOVA``), a unit test comparing
it with Nova's source and the parity tests at every microversion hold it
to Nova's.
"""

import contextlib
import contextvars
import functools

from nova.api.openstack import api_version_request
from nova.api.openstack.compute.views import servers as views_servers
from nova.objects import virtual_interface

from nova_ext.instance_list import render_cache
from nova_ext.instance_list import request_specs


#: Where a request's PageRender is, while a page is rendered.
RENDER = 'nova_ext.page_render'
# The reader of the page's volumes while a page is rendered (volumes_from):
# Nova calls the volumes method with a context only, no request.
_VOLUMES = contextvars.ContextVar('nova_ext_page_volumes', default=None)


@contextlib.contextmanager
def volumes_from(read):
    """Within, the page's volumes come from ``read``.

    :param read: a function of a context and instance uuids, as Nova's
        ``bdms_by_instance_uuid``.
    """
    token = _VOLUMES.set(read)
    try:
        yield
    finally:
        _VOLUMES.reset(token)


class PageRender(object):
    """One page's server documents, from the render cache where it can.

    A row read without its joins (``full`` false) whose document is not
    cached is recorded in ``missed`` and given a placeholder; the page is
    then rendered again with those rows read in full (fastpath.py), and
    only those: the others keep the documents the first pass found.
    """

    def __init__(self, cache, request, project_in_url):
        self.cache = cache
        self.request_part = render_cache.request_key(request,
                                                     project_in_url)
        self.missed = []
        #: The uuids rendered again (the first pass's missed), or None.
        self.redo = None
        self._found = {}

    def again(self):
        """Before the page is rendered again: render the missed only."""
        self.redo, self.missed = frozenset(self.missed), []

    def show(self, show, request, instance, kwargs):
        if self.redo is not None and instance.uuid not in self.redo:
            return {'server': self._found[instance.uuid]}
        context = request.environ['nova.context']
        key = render_cache.key(self.request_part, context, instance, kwargs)
        if key is not None:
            doc = self.cache.get(key)
            if doc is not None:
                # Nova adds host_status and security groups to the
                # documents of a page; those go into a copy.
                self._found[instance.uuid] = dict(doc)
                return {'server': self._found[instance.uuid]}
        if not instance.get('full', True):
            self.missed.append(instance.uuid)
            return {'server': _Unrendered(id=instance.uuid)}
        server = show(request, instance, **kwargs)
        if key is not None:
            self.cache.put(key, dict(server['server']))
        return server


class _Unrendered(dict):
    """A missed server's place in a page that is rendered again."""


def _redone(servers):
    return any(isinstance(server, _Unrendered) for server in servers)


class ViewBuilder(views_servers.ViewBuilder):

    @staticmethod
    def _get_instance_bdms_in_multiple_cells(ctxt, instance_uuids):
        read = _VOLUMES.get()
        if read is None:
            return views_servers.ViewBuilder.\
                _get_instance_bdms_in_multiple_cells(ctxt, instance_uuids)
        return read(ctxt, instance_uuids)

    def show(self, request, instance, **kwargs):
        render = request.environ.get(RENDER)
        if render is None:
            return super().show(request, instance, **kwargs)
        return render.show(super().show, request, instance, kwargs)

    # What Nova adds to a page's documents (services for host_status,
    # Neutron's security groups) is not read for a page that is rendered
    # again once its missed rows are read in full.

    def _add_host_status(self, servers, instances, unknown_only=False):
        if not _redone(servers):
            super()._add_host_status(servers, instances,
                                     unknown_only=unknown_only)

    def _add_security_grps(self, request, servers, instances):
        if not _redone(servers):
            super()._add_security_grps(request, servers, instances)

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
