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
"""Which nova_ext route, if any, a request to nova-api is for."""

import re

from nova_ext.api import base

# Nova's router also accepts the legacy form with the project id as the first
# path segment (/v2.1/{project_id}/servers).
_PROJECT = r'(?:/(?P<project_id>[^/]+))?'
_TABLE = (
    (base.SERVERS_INDEX, 'GET', r'/servers/?'),
    (base.SERVERS_DETAIL, 'GET', r'/servers/detail/?'),
    (base.SERVERS_CREATE, 'POST', r'/servers/?'),
    (base.SERVER_ACTION, 'POST', r'/servers/(?P<server_id>[^/]+)/action/?'),
    (base.SERVER_DELETE, 'DELETE', r'/servers/(?P<server_id>[^/]+)/?'),
    (base.VOLUME_ATTACHMENT_UPDATE, 'PUT',
     r'/servers/(?P<server_id>[^/]+)/os-volume_attachments/'
     r'(?P<volume_id>[^/]+)/?'),
)
_COMPILED = tuple((name, method, re.compile('^%s%s$' % (_PROJECT, path)))
                  for name, method, path in _TABLE)


def match(method, path_info, context):
    """Return ``(route name, url variables)`` or ``(None, None)``.

    A project id in the path that is not the caller's is left to Nova,
    which rejects it with its own 400.
    """
    for name, route_method, regex in _COMPILED:
        if method != route_method:
            continue
        found = regex.match(path_info)
        if not found:
            continue
        urlvars = {k: v for k, v in found.groupdict().items() if v}
        project_id = urlvars.pop('project_id', None)
        if project_id is not None and (
                context is None or project_id != context.project_id):
            return None, None
        return name, urlvars
    return None, None
