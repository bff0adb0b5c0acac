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
"""The ``cell0-rebuild`` API handler (spec 004).

Switched on by ``[nova_ext_cell0_rebuild]enabled``. It serves three
routes, and on each lets Nova's own code decide everything it can:

- ``POST /servers``: Nova creates the servers; once it answered 202, the
  requested networks are recorded for each (on_create.py).
- ``POST /servers/{id}/action`` with ``rebuild``, for a server mapped to
  cell0, at or above ``min_microversion``: Nova's own ``ServersController``
  runs the rebuild (validation, policy, errors, response), with a compute
  API that can rebuild from cell0 (compute_api.py). Any other action, or
  server, goes to Nova unchanged.
- ``DELETE /servers/{id}``: once Nova deleted the server, its record goes.
"""

import functools

from nova.api.openstack import api_version_request
from nova.api.openstack import wsgi as nova_wsgi
from nova import exception as nova_exception
from nova import objects
from oslo_log import log as logging
from oslo_serialization import jsonutils

from nova_ext.api import base
from nova_ext.cell0_rebuild import compute_api
from nova_ext.cell0_rebuild import eligibility
from nova_ext.cell0_rebuild import objects as ext_objects
from nova_ext.cell0_rebuild import on_create
from nova_ext import compat
from nova_ext import conf as ext_conf
from nova_ext.seams.internals import servers_controller

LOG = logging.getLogger(__name__)


@functools.cache
def controller():
    """nova_ext's ServersController, made once per process."""
    return servers_controller.controller(compute_api.Cell0RebuildAPI())


@functools.cache
def resource():
    return nova_wsgi.Resource(controller())


def _json(request):
    try:
        body = jsonutils.loads(request.body)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


class Cell0RebuildHandler(base.Handler):
    """Rebuilds servers that failed scheduling, from cell0."""

    routes = (base.SERVERS_CREATE, base.SERVER_ACTION, base.SERVER_DELETE)

    @classmethod
    def enabled(cls, conf):
        return conf.nova_ext_cell0_rebuild.enabled

    def __init__(self, conf=None):
        self.conf = conf or ext_conf.CONF
        # It runs Nova's own controller and compute API helpers, so it is
        # attached only to the Nova series it was tested with.
        self.supported = compat.tested('rebuild from cell0', LOG)

    def __call__(self, request, application):
        # Read per request, so switching it off needs no pipeline rebuild.
        if not (self.supported and self.conf.nova_ext_cell0_rebuild.enabled):
            return request.get_response(application)
        route, urlvars = base.route_of(request)
        if route == base.SERVERS_CREATE:
            return self._create(request, application)
        if route == base.SERVER_DELETE:
            return self._delete(request, application, urlvars['server_id'])
        return self._action(request, application, urlvars['server_id'])

    def _create(self, request, application):
        body = _json(request)
        response = request.get_response(application)
        server = (body or {}).get('server')
        if response.status_int != 202 or not isinstance(server, dict):
            return response
        context = request.environ['nova.context']
        try:
            count = on_create.record(controller(), context, server,
                                     jsonutils.loads(response.body))
            LOG.debug('Recorded the requested networks of %d server(s)',
                      count)
        except Exception:
            # Nova has made the servers; failing the request now would lose
            # them for the caller. They only lose rebuild from cell0.
            LOG.exception('Could not record the requested networks of a '
                          'server create; its servers cannot be rebuilt '
                          'from cell0')
        return response

    @staticmethod
    def _delete(request, application, server_id):
        response = request.get_response(application)
        if response.status_int == 204:
            try:
                ext_objects.BuildCapture.destroy_by_instance_uuids(
                    request.environ['nova.context'], [server_id])
            except Exception:
                # The purge migration removes it later.
                LOG.exception('Could not forget the record of deleted '
                              'server %s', server_id)
        return response

    def _action(self, request, application, server_id):
        body = _json(request)
        if not body or 'rebuild' not in body or not self._opted_in(request):
            return request.get_response(application)
        context = request.environ['nova.context']
        try:
            mapping = objects.InstanceMapping.get_by_instance_uuid(
                context, server_id)
        except nova_exception.InstanceMappingNotFound:
            return request.get_response(application)
        if not eligibility.in_cell0(mapping):
            return request.get_response(application)
        return self._rebuild(request, server_id)

    def _opted_in(self, request):
        wanted = self.conf.nova_ext_cell0_rebuild.min_microversion
        minimum = (api_version_request.APIVersionRequest(wanted) if wanted
                   else api_version_request.max_api_version())
        nova_request = nova_wsgi.Request(request.environ.copy())
        try:
            nova_request.set_api_version_request()
        except Exception:
            # Nova gives the 400 or 406 for a bad version header.
            return False
        return nova_request.api_version_request >= minimum

    @staticmethod
    def _rebuild(request, server_id):
        """Nova's rebuild action, run by nova_ext's controller."""
        environ = dict(request.environ)
        environ['wsgiorg.routing_args'] = ((), {'action': 'action',
                                                'id': server_id})
        return nova_wsgi.Request(environ).get_response(resource())
