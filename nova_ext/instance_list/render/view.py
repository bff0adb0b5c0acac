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

The request specs of a page come from request_specs.py, the block device
mappings from the instance index (``volumes_from``), its security groups
from the Neutron requests started when it was listed (``groups_from``,
security_groups.py), and its documents from the render cache where they
are (:class:`PageRender`); a list without details only checks that
Nova could load its request specs. Nova's view offers these changes
through its private methods only: ``nova_ext.seams.internals.server_views``
overrides those, and the parity tests at every microversion hold the
result to Nova's.
"""

import contextlib
import contextvars
import copy
import functools

from nova_ext.instance_list.render import encode
from nova_ext.instance_list.render import render_cache
from nova_ext.instance_list.render import request_specs
from nova_ext.seams.internals import server_views


#: Where a request's PageRender is, while a page is rendered.
RENDER = 'nova_ext.page_render'
# The reader of the page's volumes while a page is rendered (volumes_from):
# Nova calls the volumes method with a context only, no request.
_VOLUMES = contextvars.ContextVar('nova_ext_page_volumes', default=None)
_GROUPS = contextvars.ContextVar('nova_ext_page_groups', default=None)
# Set while Nova's view renders a list without details (index).
_LISTED = contextvars.ContextVar('nova_ext_page_listed', default=False)


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


@contextlib.contextmanager
def groups_from(lookup):
    """Within, the page's security groups come from ``lookup``.

    :param lookup: the page's groups (``security_groups.start``), or None:
        Nova's view asks Neutron itself.
    """
    token = _GROUPS.set(lookup)
    try:
        yield
    finally:
        _GROUPS.reset(token)


class PageRender(object):
    """One page's server documents, from the render cache where it can.

    A row read without its joins (``full`` false) whose document is not
    cached is recorded in ``missed`` and given a placeholder; the page is
    then rendered again with those rows read in full (detailed.py), and
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
        #: The availability zones of the page, asked once for each host
        #: and zone of a row (``render_cache.zone``).
        self.zones = {}
        #: The flags Nova's view passed with the page's last document.
        self.flags = None

    def part(self):
        """A render of some of the page's servers, with the page's zones."""
        made = copy.copy(self)
        made.missed, made.redo, made._found, made.flags = [], None, {}, None
        return made

    def again(self):
        """Before the page is rendered again: render the missed only."""
        self.redo, self.missed = frozenset(self.missed), []

    def show(self, show, request, instance, kwargs):
        if self.redo is not None and instance.uuid not in self.redo:
            return {'server': self._found[instance.uuid]}
        context = request.environ['nova.context']
        self.flags = (kwargs.get('show_extra_specs'),
                      kwargs.get('show_extended_attr'))
        key = render_cache.key(self.request_part, context, instance, kwargs,
                               self.zones)
        if key is not None:
            doc = self.cache.get(key)
            if doc is not None:
                return self._shown(instance.uuid, doc)
        if not instance.get('full', True):
            self.missed.append(instance.uuid)
            return {'server': _Unrendered(id=instance.uuid)}
        server = show(request, instance, **kwargs)
        if key is None:
            return server
        doc = render_cache.kept(server['server'])
        self.cache.put(key, doc)
        # As a document found in the cache: the page's body is then kept
        # with it (detail_bodies), not only by the next request's render.
        return self._shown(instance.uuid, doc)

    def _shown(self, uuid, doc):
        """``show``'s answer of a kept document, found for a second pass.

        Nova adds host_status and security groups to the documents of a
        page; those go into a copy.
        """
        self._found[uuid] = encode.Shown(doc)
        return {'server': self._found[uuid]}

    def basic(self, basic, request, instance, kwargs):
        """A server's document in a list without details."""
        key = render_cache.listed_key(self.request_part, instance)
        if key is None:
            return basic(request, instance, **kwargs)
        doc = self.cache.get(key)
        if doc is None:
            doc = encode.Kept(basic(request, instance, **kwargs)['server'])
            self.cache.put(key, doc)
        return {'server': encode.Shown(doc)}


class _Unrendered(dict):
    """A missed server's place in a page that is rendered again."""


def _redone(servers):
    return any(isinstance(server, _Unrendered) for server in servers)


class ViewBuilder(server_views.ViewBuilder):
    """Nova's server view builder, reading what a page needs lightly."""

    def read_volumes(self, ctxt, instance_uuids):
        read = _VOLUMES.get()
        if read is None:
            return super().read_volumes(ctxt, instance_uuids)
        return read(ctxt, instance_uuids)

    def request_specs(self, context, instance_uuids):
        if _LISTED.get():
            # A list without details shows neither the zone nor the hints
            # Nova reads the specs for (server_views.LIST_SHOWS_NO_SPECS),
            # but fails where Nova cannot load one.
            request_specs.check(context, instance_uuids)
            return []
        return request_specs.get_by_instance_uuids(context, instance_uuids)

    def security_group_bindings(self, context, servers):
        lookup = _GROUPS.get()
        if lookup is None:
            return super().security_group_bindings(context, servers)
        return lookup.bindings(context, servers)

    def show(self, request, instance, **kwargs):
        render = request.environ.get(RENDER)
        if render is None:
            return super().show(request, instance, **kwargs)
        return render.show(super().show, request, instance, kwargs)

    def index(self, request, instances, cell_down_support=False):
        token = _LISTED.set(server_views.LIST_SHOWS_NO_SPECS)
        try:
            return super().index(request, instances,
                                 cell_down_support=cell_down_support)
        finally:
            _LISTED.reset(token)

    def basic(self, request, instance, **kwargs):
        render = request.environ.get(RENDER)
        if render is None:
            return super().basic(request, instance, **kwargs)
        return render.basic(super().basic, request, instance, kwargs)

    def adds_to_page(self, servers):
        # What Nova adds to a page's documents (services for host_status,
        # Neutron's security groups) is not read for a page that is
        # rendered again once its missed rows are read in full.
        return not _redone(servers)


@functools.cache
def builder():
    """The ViewBuilder of this process, made on first use."""
    return ViewBuilder()
