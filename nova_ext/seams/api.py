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
"""nova-api: the ``nova_ext`` paste filter.

An operator adds, in api-paste.ini::

    [filter:nova_ext]
    paste.filter_factory = nova_ext.seams.api:filter_factory

and puts ``nova_ext`` in the ``openstack_compute_api_v21`` pipeline right
after ``keystonecontext``, so that requests reach it authenticated, with
``environ['nova.context']`` set. Nothing of Nova's is changed.

One point has no seam in Nova: the instance list. When
``[nova_ext_instance_list]driver`` is not ``cells``, loading the filter
wraps ``nova.compute.instance_list.get_instance_objects_sorted`` (called by
nova-api only for ``GET /servers`` and ``GET /servers/detail``) with
:class:`nova_ext.instance_list.serving.Selector`, for the Nova versions in
:data:`nova_ext.compat.TESTED_NOVA` only.
"""

import contextlib

from oslo_log import log as logging
import webob.dec

from nova_ext import api as api_handlers
from nova_ext.api import base
from nova_ext.api import routes
from nova_ext import compat
from nova_ext import conf as ext_conf
from nova_ext.index.marks import witness
from nova_ext.instance_list import serving
from nova_ext import startup_log

LOG = logging.getLogger(__name__)


class _Step(object):
    """One handler in a route's chain, as a WSGI application."""

    def __init__(self, name, handler, application):
        self.name = name
        self.handler = handler
        self.application = application

    @webob.dec.wsgify
    def __call__(self, request):
        try:
            return self.handler(request, self.application)
        except Exception:
            if request.method != 'GET':
                raise
            LOG.exception('nova_ext API handler %s failed on %s %s; '
                          'answering from Nova instead', self.name,
                          request.method, request.path)
            return request.get_response(self.application)


class NovaExtMiddleware(object):
    """Routes the requests of enabled routes through their handler chains."""

    def __init__(self, application, handlers):
        self.application = application
        self.chains = {}
        for route, named in handlers.items():
            chain = application
            for name, handler in reversed(named):
                chain = _Step(name, handler, chain)
            self.chains[route] = chain

    def __call__(self, environ, start_response):
        route, urlvars = routes.match(environ)
        chain = self.chains.get(route)
        if chain is None:
            return self.application(environ, start_response)
        environ[base.ENVIRON_KEY] = (route, urlvars)
        return chain(environ, start_response)


def attach_instance_list(conf):
    """Route nova-api's instance list through nova_ext's driver selector.

    Idempotent; returns the Selector, or None when the driver is ``cells``
    or this Nova was not tested.
    """
    from nova.compute import instance_list as nova_instance_list

    if conf.nova_ext_instance_list.driver == 'cells':
        return None
    if not compat.tested('the nova_ext instance list driver', LOG):
        return None
    stock = serving.stock()
    selector = serving.Selector(conf, stock)

    def get_instance_objects_sorted(*args, **kwargs):
        return selector.get_instance_objects_sorted(*args, **kwargs)

    serving.attached(stock, selector)
    nova_instance_list.get_instance_objects_sorted = (
        get_instance_objects_sorted)
    if conf.nova_ext_instance_list.driver == 'index':
        # The index answers once every holder of marks was seen vouching
        # (``witness``): seen from now, not from the first list.
        witness.get_witness(conf)
    startup_log.info(LOG, 'nova_ext instance list driver %s attached to '
                     'nova-api', conf.nova_ext_instance_list.driver)
    return selector


def detach_instance_list():
    """Give Nova its own instance list back (tests, reloads)."""
    from nova.compute import instance_list as nova_instance_list

    stock = serving.detached()
    if stock is not None:
        nova_instance_list.get_instance_objects_sorted = stock
    witness.reset()


@contextlib.contextmanager
def stock_instance_list():
    """Within, nova-api lists servers with Nova's own function.

    For comparing with Nova's own answers (tests, benchmarks, the demo):
    Nova's function (``serving.stock()``) is put back on its module until
    the block ends, whatever happens in it. nova_ext's servers-list
    handler answers nothing meanwhile (there is no selector).
    """
    from nova.compute import instance_list as nova_instance_list

    wrapper = nova_instance_list.get_instance_objects_sorted
    nova_instance_list.get_instance_objects_sorted = serving.stock()
    try:
        with serving.suspended():
            yield
    finally:
        nova_instance_list.get_instance_objects_sorted = wrapper


def filter_factory(global_conf, **local_conf):
    """Paste filter factory for the ``nova_ext`` filter."""
    handlers = api_handlers.load_handlers(ext_conf.CONF)
    attach_instance_list(ext_conf.CONF)

    def _filter(application):
        names = {route: [n for n, _ in named]
                 for route, named in sorted(handlers.items())}
        startup_log.info(LOG, 'nova_ext attached to nova-api; handlers: %s',
                         names or 'none')
        if not handlers:
            # Nothing enabled: give paste Nova's application itself, so the
            # filter costs nothing and cannot change a response.
            return application
        return NovaExtMiddleware(application, handlers)
    return _filter
