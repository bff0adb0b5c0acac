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
"""Server lists rendered from a driver's rows (``fast_render``).

:func:`respond` answers ``GET /servers`` and ``GET /servers/detail``:
Nova's controller validates the request (controller.py), the driver lists
the page as rows (a :class:`~nova_ext.instance_list.base.RowsDriver`), and
Nova's view builder renders them (fastpath.py, view.py, rows.py; with the
render cache, render_cache.py, narrow.py and detailed.py); the body is
serialised and the headers set as Nova's ``wsgi.Resource`` does. It skips
what costs most and changes nothing in the answer: building Instance
objects, gathering faults from every cell, and validating the response
against Nova's schemas.
"""

from nova.api.openstack import wsgi as nova_wsgi

from nova_ext import exception
from nova_ext.instance_list import base
from nova_ext.instance_list.render import controller
from nova_ext.instance_list.render import detail_bodies
from nova_ext.instance_list.render import detailed
from nova_ext.instance_list.render import encode
from nova_ext.instance_list.render import fastpath
from nova_ext.instance_list.render import loadable
from nova_ext.instance_list.render import narrow
from nova_ext.instance_list.render import page_bodies
from nova_ext.instance_list.render import render_cache
from nova_ext.instance_list.render import rows
from nova_ext.instance_list.render import security_groups
from nova_ext.instance_list.render import view
from nova_ext.seams.internals import schema_validator
from nova_ext.seams.internals import wsgi_response

#: Raised when Nova's view code renders the request instead.
NotRendered = fastpath.NotRendered


class Declined(exception.NovaExtError):
    """The driver did not list the page; Nova lists and renders it.

    The selector has counted why.
    """


def attach():
    """What rendering needs in this process, from now on (idempotent)."""
    narrow.attach()
    schema_validator.attach()


def detach():
    """Undo :func:`attach` (tests)."""
    narrow.detach()
    schema_validator.detach()


def respond(conf, selector, request, detail):
    """The response to a server list request, rendered from the index.

    :param selector: the attached ``serving.Selector``, whose driver is a
        ``RowsDriver``.
    :param request: the webob request of ``GET /servers`` (or of
        ``/servers/detail``, with ``detail``).
    :returns: a webob response, or None when Nova's controller answers the
        request without listing (an error): Nova then answers it.
    :raises NotRendered: Nova renders this request.
    :raises Declined: the driver did not list the page.
    """
    listing = controller.listing(request.environ, detail=detail)
    if listing is None:
        return None
    try:
        return _response(listing.request, _body(conf, selector, listing))
    except (exception.UnsupportedNovaVersion, base.Unservable) as e:
        raise NotRendered(str(e))


def _body(conf, selector, listing):
    rows.check_name_template()
    ctx = listing.context
    args = listing.kwargs
    filters = fastpath.db_filters(ctx, args.get('search_opts') or {})
    driver = selector.driver
    selector.prepare(driver, ctx)
    marker = fastpath.check_build_requests(ctx, filters, listing)
    cache = render_cache.cache(conf)
    # With the render cache, a detailed page is listed without the joins
    # that only rendering reads; the rows it has to render are read in full
    # afterwards. Nova's view of a list without details reads the uuid and
    # name of each server, so a list reads little else (narrow.LISTED).
    columns = version = spec = None
    if not listing.detail:
        # With each row's version: its network info is loaded once per
        # version (loadable.py).
        columns = narrow.LISTED
    elif cache is not None:
        columns = narrow.COLUMNS
    if columns is not None:
        # And its request spec's digest (request_specs.py).
        version = driver.version_column()
        spec = driver.spec_column()
    attrs = [] if columns is not None else fastpath.query_attrs(listing)

    def _records():
        return driver.records(
            ctx, filters, args.get('limit'), marker, attrs,
            args.get('sort_keys'), args.get('sort_dirs'),
            cell_down_support=args.get('cell_down_support', False))
    if columns is not None:
        def _listed(records=_records):
            with narrow.narrowed(columns, args.get('sort_keys'), version,
                                 spec):
                return records()
    else:
        _listed = _records
    served, records = selector.attempt(driver, _listed)
    if not served:
        raise Declined()
    if not listing.detail:
        loadable.check_page(driver, records)
    lookup = None
    if listing.detail:
        # Nova's view asks with the request's context, not get_all's.
        lookup = security_groups.start(
            conf, listing.request.environ['nova.context'],
            [record['uuid'] for record in fastpath.distinct(records)])
        if lookup is not None and lookup.kept:
            selector.stats.add('groups_kept')
        elif conf.nova_ext_instance_list.neutron_feed_url:
            selector.stats.add('groups_asked')
    if not listing.detail and cache is not None:
        # Before the rows are rendered, which adds to them.
        kept = page_bodies.key(listing.request,
                               fastpath.project_in_url(listing), records)

        def render(rendered=records):
            page = fastpath.instances(driver, ctx, listing, rendered)
            return fastpath.render_listed(driver, listing, page, cache)

        def render_rows(positions):
            return render([records[n] for n in positions]).get(
                'servers', ())
        return page_bodies.body(
            _Counted.of(page_bodies.cache(conf), selector.stats), kept,
            render, render_rows)
    with view.groups_from(lookup):
        if listing.detail and cache is not None:
            return detailed.render_cached(
                driver, listing, records, cache,
                bodies=_Counted.of(detail_bodies.cache(conf),
                                   selector.stats),
                groups=lookup)
        page = fastpath.instances(driver, ctx, listing, records)
        return fastpath.render_listed(driver, listing, page, cache)


class _Counted(object):
    """A cache of written bodies whose every body given is counted.

    As ``bodies_kept`` in the selector's stats: the requests answered
    with a kept body, no server rendered; and as ``bodies_patched`` those
    answered with the last body of the request, its changed servers alone
    rendered again.
    """

    def __init__(self, bodies, stats):
        self._bodies = bodies
        self._stats = stats

    @classmethod
    def of(cls, bodies, stats):
        """``bodies`` counted; None (no cache) as it is."""
        return None if bodies is None else cls(bodies, stats)

    def get(self, key):
        found = self._bodies.get(key)
        if found is not None:
            self._stats.add('bodies_kept')
        return found

    def put(self, key, value):
        self._bodies.put(key, value)

    def given(self, key, value):
        self._bodies.given(key, value)

    def last(self, key):
        return self._bodies.last(key)

    def patched(self):
        self._stats.add('bodies_patched')
        self._bodies.patched()


def _response(request, body):
    """The webob response Nova's wsgi.Resource makes of a body.

    Its text is Nova's, its documents from the render cache written from
    their kept texts (encode.py).
    """
    response = wsgi_response.serialize(
        body, request, request.best_match_content_type(), encode.dumps)
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
