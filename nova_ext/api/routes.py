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
"""Which nova_ext route, if any, a request to nova-api is for.

A request is matched exactly as Nova's router matches it (a routes
``Mapper`` behind ``RoutesMiddleware``): no trailing slash, the legacy
project-id segment only in Nova's own form, and the method that
``RoutesMiddleware`` routes by, which ``_method`` may override.
"""

import re

from routes import middleware as routes_middleware
import webob

from nova_ext.api import base

# Nova's ProjectMapper accepts the legacy form with the project id as the
# first path segment (/v2.1/{project_id}/servers), but only an id made of
# hex digits and dashes; any other first segment is no route at all.
_PROJECT = r'(?:/(?P<project_id>[0-9a-f-]+))?'
_TABLE = (
    (base.SERVERS_INDEX, 'GET', r'/servers'),
    (base.SERVERS_DETAIL, 'GET', r'/servers/detail'),
    (base.SERVERS_CREATE, 'POST', r'/servers'),
    (base.SERVER_ACTION, 'POST', r'/servers/(?P<server_id>[^/]+)/action'),
    (base.SERVER_DELETE, 'DELETE', r'/servers/(?P<server_id>[^/]+)'),
    (base.VOLUME_ATTACHMENT_UPDATE, 'PUT',
     r'/servers/(?P<server_id>[^/]+)/os-volume_attachments/'
     r'(?P<volume_id>[^/]+)'),
)
_COMPILED = tuple((name, method, re.compile('^%s%s$' % (_PROJECT, path)))
                  for name, method, path in _TABLE)

# Routes that only read. Reached through a method override, Nova's answer
# to them is left to Nova: nothing is done that a handler must follow.
_READS = (base.SERVERS_INDEX, base.SERVERS_DETAIL)


def routed_method(environ):
    """The method Nova's router routes ``environ`` by.

    The same rule as ``routes.middleware.RoutesMiddleware``, which Nova's
    router runs with ``use_method_override`` on.
    """
    if '_method' in environ.get('QUERY_STRING', ''):
        where = 'GET'
    elif (environ['REQUEST_METHOD'] == 'POST' and
          routes_middleware.is_form_post(environ)):
        where = 'POST'
    else:
        return environ['REQUEST_METHOD']
    request = webob.Request(environ)
    request.errors = 'ignore'
    try:
        method = getattr(request, where).get('_method')
    except UnicodeDecodeError:
        method = None
    return method.upper() if method else environ['REQUEST_METHOD']


def match(environ):
    """Return ``(route name, url variables)`` or ``(None, None)``.

    A project id in the path that is not the caller's is left to Nova,
    which rejects it with its own 400.
    """
    method = routed_method(environ)
    path_info = environ.get('PATH_INFO', '')
    context = environ.get('nova.context')
    for name, route_method, regex in _COMPILED:
        if method != route_method:
            continue
        found = regex.match(path_info)
        if not found:
            continue
        if name in _READS and environ['REQUEST_METHOD'] != method:
            return None, None
        urlvars = {k: v for k, v in found.groupdict().items() if v}
        project_id = urlvars.pop('project_id', None)
        if project_id is not None and (
                context is None or project_id != context.project_id):
            return None, None
        return name, urlvars
    return None, None
