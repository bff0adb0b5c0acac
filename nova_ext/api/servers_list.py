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
"""The ``servers-list`` API handler: server lists rendered from the index.

Switched on by ``[nova_ext_instance_list]fast_render`` with the ``index``
driver. For ``GET /servers`` and ``GET /servers/detail`` it lets Nova's
controller validate the request (capture.py), lists the page from the index
and has Nova's view builder render the index rows (fastpath.py), then
serialises the body and sets the headers as Nova's ``wsgi.Resource`` does.
It skips what costs most and changes nothing in the answer: building
Instance objects, gathering faults from every cell, and validating the
response against Nova's schemas.

Whatever it does not render is answered by Nova: a request Nova rejects, a
page with build requests or an IP filter (through the index driver as
usual), and anything the index driver declines or fails at (then through
Nova's own cells path, counted once).
"""

from nova.api.openstack import wsgi as nova_wsgi
from oslo_log import log as logging

from nova_ext.api import base
from nova_ext import conf as ext_conf
from nova_ext.entry_points import api as api_entry_point
from nova_ext.instance_list import capture
from nova_ext.instance_list import fastpath
from nova_ext.instance_list import narrow
from nova_ext.instance_list import render_cache
from nova_ext.instance_list import rows
from nova_ext.instance_list import view

LOG = logging.getLogger(__name__)


class ServersListHandler(base.Handler):
    """Renders server lists from the instance index."""

    routes = (base.SERVERS_INDEX, base.SERVERS_DETAIL)

    @classmethod
    def enabled(cls, conf):
        group = conf.nova_ext_instance_list
        return group.driver == 'index' and group.fast_render

    def __init__(self, conf=None):
        self.conf = conf or ext_conf.CONF

    def __call__(self, request, application):
        selector = api_entry_point.selector()
        # Read per request, so that a benchmark can compare both in one
        # nova-api; nothing reloads nova-api's configuration otherwise.
        fast = self.conf.nova_ext_instance_list.fast_render
        if selector is None or not fast:
            return request.get_response(application)
        route, _ = base.route_of(request)
        listing = capture.listing(request.environ,
                                  detail=route == base.SERVERS_DETAIL)
        if listing is None:
            return request.get_response(application)
        try:
            body = self._body(selector, listing)
        except fastpath.NotRendered as e:
            selector.stats.add('handed', str(e))
            LOG.debug('nova_ext leaves %s to Nova to render: %s',
                      request.path_qs, e)
            return request.get_response(application)
        if body is None:
            with selector.stock_only():
                return request.get_response(application)
        selector.stats.add('rendered')
        selector.report()
        return _response(listing.request, body)

    def _body(self, selector, listing):
        """The response body, or None when the driver declined."""
        rows.check_name_template()
        ctx = listing.context
        args = listing.kwargs
        filters = fastpath.db_filters(ctx, args.get('search_opts') or {})
        marker = fastpath.check_build_requests(ctx, filters, listing)
        driver = selector.driver
        cache = (render_cache.cache(self.conf) if listing.detail else None)
        # With the render cache, the page is listed without the joins
        # that only rendering reads; the rows it has to render are read
        # in full afterwards.
        attrs = [] if cache is not None else fastpath.query_attrs(listing)

        def _records():
            return driver.records(
                ctx, filters, args.get('limit'), marker, attrs,
                args.get('sort_keys'), args.get('sort_dirs'),
                cell_down_support=args.get('cell_down_support', False))
        if cache is not None:
            def _listed(records=_records):
                with narrow.narrowed(args.get('sort_keys')):
                    return records()
        else:
            _listed = _records
        served, records = selector.attempt(driver, _listed)
        if not served:
            return None
        if cache is not None:
            return fastpath.render_cached(driver, listing, records, cache)
        page = fastpath.instances(driver, ctx, listing, records)
        return fastpath.render_or_hand(driver, view.builder(), listing,
                                       page)


def _response(request, body):
    """The webob response Nova's wsgi.Resource makes of a body."""
    response = nova_wsgi.ResponseObject(body).serialize(
        request, request.best_match_content_type())
    version = request.api_version_request
    if not version.is_null():
        response.headers[nova_wsgi.API_VERSION_REQUEST_HEADER] = (
            'compute ' + version.get_string())
        response.headers[nova_wsgi.LEGACY_API_VERSION_REQUEST_HEADER] = (
            version.get_string())
        response.headers.add('Vary', nova_wsgi.API_VERSION_REQUEST_HEADER)
        response.headers.add('Vary',
                             nova_wsgi.LEGACY_API_VERSION_REQUEST_HEADER)
    return response
