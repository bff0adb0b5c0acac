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
"""Nova's own handling of a server list request, up to the listing itself.

To answer ``GET /servers`` exactly as Nova would, nova_ext runs Nova's
``ServersController.index``/``detail`` on the request: its query schemas
(which also drop the parameters older microversions ignore), its policy
checks, its 400s and 403s, and its translation of the query into the
arguments of ``compute.API.get_all``. That controller is nova_ext's own
instance, whose ``compute_api`` stops at ``get_all`` and hands back the
arguments (:func:`listing`). Any other outcome (an error, or an answer
the controller gives without listing) is left to Nova, which repeats it.
"""

import functools

from nova.api.openstack import wsgi as nova_wsgi
from oslo_log import log as logging
import webob.exc

from nova_ext.seams.internals import schema_validator
from nova_ext.seams.internals import servers_controller

LOG = logging.getLogger(__name__)


class _Listed(webob.exc.HTTPBadRequest):
    """The arguments Nova's controller called ``get_all`` with.

    A 400 only so that Nova's ``expected_errors`` decorator lets it pass
    unchanged; it never reaches a caller.
    """

    def __init__(self, context, kwargs):
        super().__init__()
        self.context = context
        self.kwargs = kwargs


class _ListingAPI(object):
    """Stands for compute.API in nova_ext's ServersController."""

    def get_all(self, context, **kwargs):
        raise _Listed(context, kwargs)


class Listing(object):
    """A list request as Nova validated it.

    :ivar request: Nova's ``wsgi.Request`` for it (microversion set, query
        parameters as the schemas left them), for the view builder.
    :ivar detail: ``GET /servers/detail`` rather than ``GET /servers``.
    :ivar context: the context ``get_all`` runs with (elevated for
        ``all_tenants``).
    :ivar kwargs: the other arguments of ``get_all``.
    """

    def __init__(self, request, detail, context, kwargs):
        self.request = request
        self.detail = detail
        self.context = context
        self.kwargs = kwargs


@functools.cache
def servers():
    """nova_ext's ServersController, made once per process."""
    return servers_controller.controller(_ListingAPI())


def listing(environ, detail):
    """Run Nova's controller on a request until it lists.

    :returns: a :class:`Listing`, or None when Nova answers without one.
    """
    environ = dict(environ)
    # The query schemas may drop parameters from request.GET, which webob
    # caches in the environ; Nova's own handling must see them all.
    environ.pop('webob._parsed_query_vars', None)
    request = nova_wsgi.Request(environ)
    try:
        request.set_api_version_request()
        # Nova's wsgi.Resource refuses a Content-Type it does not read
        # (415), a GET's too, before its controller runs.
        request.get_content_type()
        ctrl = servers()
        # Nova's checks of the query, their validator classes made once
        # (where render.attach installed that).
        with schema_validator.reusing():
            (ctrl.detail if detail else ctrl.index)(req=request)
    except _Listed as listed:
        return Listing(request, detail, listed.context, listed.kwargs)
    except Exception as e:
        LOG.debug('Nova answers %s without listing: %s', request.path, e)
    return None
