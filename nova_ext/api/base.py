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
"""The API handler contract (``nova_ext.api.handlers``).

The nova_ext paste filter sits in nova-api's pipeline after
``keystonecontext`` and hands the requests of a few routes to the handlers
enabled for them. A handler receives the request and the WSGI application
that would otherwise have answered it (Nova's, or the next handler's), so
it can answer itself, delegate, or delegate and act on Nova's answer.
"""

import abc

from nova_ext import plugins

# The routes a handler can serve, by name. Their paths are matched by
# nova_ext.api.routes.
SERVERS_INDEX = 'servers:index'     # GET /servers
SERVERS_DETAIL = 'servers:detail'   # GET /servers/detail
SERVERS_CREATE = 'servers:create'   # POST /servers
SERVER_ACTION = 'servers:action'    # POST /servers/{server_id}/action
SERVER_DELETE = 'servers:delete'    # DELETE /servers/{server_id}
# PUT /servers/{server_id}/os-volume_attachments/{volume_id}
VOLUME_ATTACHMENT_UPDATE = 'servers:volume_attachment_update'

ROUTES = (SERVERS_INDEX, SERVERS_DETAIL, SERVERS_CREATE, SERVER_ACTION,
          SERVER_DELETE, VOLUME_ATTACHMENT_UPDATE)

# Where the filter leaves the matched route. Not in webob's urlvars: Nova's
# router overwrites those once a handler delegates to it.
ENVIRON_KEY = 'nova_ext.route'


def route_of(request):
    """The route a request matched, as ``(route name, url variables)``."""
    return request.environ[ENVIRON_KEY]


class Handler(plugins.Switched, abc.ABC):
    """Serves some of the routes in ``ROUTES``.

    Handlers are instantiated once per nova-api process, with no arguments,
    when the paste pipeline is built. A handler is enabled when its
    ``enabled(conf)`` (:class:`nova_ext.plugins.Switched`) says so, or when
    it is listed in ``[nova_ext_api]handlers``; the default is off.
    """

    #: The route names (from ``ROUTES``) this handler serves.
    routes = ()

    @abc.abstractmethod
    def __call__(self, request, application):
        """Answer one request.

        :param request: a ``webob.Request``;
            ``request.environ['nova.context']`` is the caller's
            RequestContext and :func:`route_of` gives the route's name and
            variables (``server_id`` for ``servers:action``,
            ``servers:delete`` and ``servers:volume_attachment_update``,
            which has ``volume_id`` too).
        :param application: the WSGI application that answers the request
            if this handler does not; call ``request.get_response
            (application)`` to delegate.
        :returns: a WSGI application, usually a ``webob.Response``.

        An exception raised from a GET handler is logged and the request is
        served by ``application`` instead. A POST handler must give the
        same error Nova would (a ``webob.exc`` response with a message),
        since a request that may already have changed something is never
        sent twice.
        """
