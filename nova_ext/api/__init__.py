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
"""API handlers: their contract (``base``) and their loading."""

from nova_ext.api import base
from nova_ext import exception
from nova_ext import plugins

NAMESPACE = 'nova_ext.api.handlers'


def load_handlers(conf):
    """Enabled handlers as ``{route: [(name, handler)]}``."""
    by_route = {}
    for name, handler in plugins.load_switched(
            NAMESPACE, base.Handler, conf, conf.nova_ext_api.handlers):
        unknown = set(handler.routes) - set(base.ROUTES)
        if unknown:
            raise exception.NovaExtError(
                'nova_ext: API handler %r serves unknown routes %s; known '
                'routes are %s' % (name, sorted(unknown), list(base.ROUTES)))
        for route in handler.routes:
            by_route.setdefault(route, []).append((name, handler))
    return by_route
