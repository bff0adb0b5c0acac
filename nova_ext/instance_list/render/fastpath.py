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
"""A server list page from index rows, rendered by Nova's own view code.

This is ``nova.compute.api.API.get_all`` followed by the controller's
``fill_faults`` and ``ViewBuilder.index``/``detail``, step for step, with
two differences: the instances are :class:`rows.IndexedInstance` rather than
Instance objects, and the faults are joined in the index query instead of
gathered from every cell. What ``get_all`` would do in ways this cannot
follow exactly is handed to Nova (``NotRendered``): a page holding build
requests (Nova renders them from the serialized instances they keep), and IP
address filters (matched through Neutron or in each instance's network
info).
"""

import collections
import contextlib

from nova.api.openstack import api_version_request
from nova.db.api import models as api_models
from nova import exception as nova_exception
from nova import objects
import sqlalchemy as sa

from nova_ext import direct_reads
from nova_ext import exception
from nova_ext.instance_list import base
from nova_ext.instance_list.render import narrow
from nova_ext.instance_list.render import request_specs
from nova_ext.instance_list.render import rows
from nova_ext.instance_list.render import view
from nova_ext.seams.internals import api_db
from nova_ext.seams.internals import server_views


class NotRendered(exception.NovaExtError):
    """nova_ext does not render this request; Nova's view code does."""


#: compute.API.get_all's renames of the API's filters into database columns.
_RENAMED = {'image': 'image_ref', 'name': 'display_name',
            'tenant_id': 'project_id'}
_IP_FILTERS = frozenset(['ip', 'ip6', 'fixed_ip'])


def db_filters(context, search_opts):
    """The filters ``get_all`` queries the cells with."""
    filters = {}
    for opt, value in search_opts.items():
        if opt in _IP_FILTERS:
            raise NotRendered('IP address filters are matched outside the '
                              'database')
        if opt == 'flavor':
            try:
                flavor = objects.Flavor.get_by_flavor_id(context, value)
            except nova_exception.FlavorNotFound:
                raise NotRendered('flavor %s does not exist' % value)
            filters['instance_type_id'] = flavor.id
        else:
            filters[_RENAMED.get(opt, opt)] = value
    return filters


_BUILD_REQUESTS = api_models.BuildRequest.__table__
# Built once, as every rendered list asks one of them.
_ANY_BUILD_REQUEST = sa.select(sa.exists().select_from(_BUILD_REQUESTS))
_ANY_OF_PROJECT = sa.select(sa.exists().where(
    _BUILD_REQUESTS.c.project_id == sa.bindparam('project_id')))


def _any_build_request(context):
    """Whether ``BuildRequestList.get_all(context)`` would read a row.

    The same rows (all of them for an admin context, else the context's
    project's), as one ``EXISTS`` on the engine Nova's read uses, in one
    round trip (``direct_reads``): the build requests are not built.
    """
    engine = api_db.engine()
    if context.is_admin:
        return direct_reads.scalar(engine, _ANY_BUILD_REQUEST)
    return direct_reads.scalar(engine, _ANY_OF_PROJECT,
                               {'project_id': context.project_id})


def check_build_requests(context, filters, listing):
    """The marker cells are listed from, once build requests are ruled out.

    Build requests come first in Nova's order; they are looked up as
    ``get_all`` does, and a page that holds any goes to Nova. Where there
    is none to read, Nova's lookup finds none, and its marker is none of
    them (its MarkerNotFound): nothing else of it depends on the rows but
    its check of the sort directions, which the index query makes too
    (Nova then answers its 400).
    """
    marker = listing.kwargs.get('marker')
    if not _any_build_request(context):
        return marker
    try:
        found = objects.BuildRequestList.get_by_filters(
            context, filters, limit=listing.kwargs.get('limit'),
            marker=marker, sort_keys=listing.kwargs.get('sort_keys'),
            sort_dirs=listing.kwargs.get('sort_dirs'))
    except nova_exception.MarkerNotFound:
        return marker
    if found:
        raise NotRendered('build requests are on the page')
    # The marker was a build request: the cells are listed from the start.
    return None


#: What the index query does not join, though get_all asks for it: the
#: services (from the cells, instance_list/services.py), security groups
#: (the view reads Neutron's) and the metadata (read without ORM objects,
#: instances()).
_NOT_JOINED = frozenset(['services', 'security_groups', 'metadata',
                         'system_metadata'])


def query_attrs(listing):
    """What the index query joins: get_all's fields, faults for details."""
    attrs = ['info_cache']
    attrs.extend(a for a in listing.kwargs.get('expected_attrs') or []
                 if a not in attrs and a not in _NOT_JOINED)
    if listing.detail:
        attrs.append('fault')
    return attrs


def distinct(records):
    """The rows of a page without the duplicates get_all drops."""
    seen = set()
    page = []
    for record in records:
        if record['uuid'] not in seen:
            seen.add(record['uuid'])
            page.append(record)
    return page


def instances(driver, context, listing, records, full=True):
    """Index rows as instances, without the duplicates get_all drops.

    :param full: whether the rows were read with their joins; the metadata
        is read for those only.
    """
    page = distinct(records)
    uuids = [record['uuid'] for record in page]
    # The list of servers shows neither; details show the metadata always
    # and the system metadata where get_all was asked for it.
    metadata = (driver.metadata(context, uuids)
                if listing.detail and full else {})
    system = (driver.metadata(context, uuids, system=True)
              if full and 'system_metadata' in (
                  listing.kwargs.get('expected_attrs') or []) else {})
    flavors = {}
    return [rows.IndexedInstance(record, flavors,
                                 metadata.get(record['uuid'], []),
                                 system.get(record['uuid'], []))
            for record in page]


def render(driver, view_builder, listing, page, volumes=None):
    """The response body, by Nova's view builder.

    The volumes of the page are read from the index, where ``driver`` keeps
    them.

    :param volumes: the request's :class:`PageVolumes`, if it renders the
        page twice (``PageRender.again``: the second pass shows the first
        pass's documents but for the servers it renders again); else the
        page's volumes are read for this call.
    """
    with request_specs.digests_from(_spec_digests(driver, page)):
        return _render(driver, view_builder, listing, page, volumes)


def _render(driver, view_builder, listing, page, volumes):
    cell_down_support = listing.kwargs.get('cell_down_support', False)
    if not listing.detail:
        return view_builder.index(listing.request, page,
                                  cell_down_support=cell_down_support)
    if _shows_host_status(view_builder, listing):
        fill_services(driver, listing, page)
    if volumes is None:
        volumes = PageVolumes(driver)
    with view.volumes_from(volumes):
        return view_builder.detail(listing.request, page,
                                   cell_down_support=cell_down_support)


def _cell_id(instance):
    return instance.cell_id


def fill_services(driver, listing, page):
    # Rows a first pass of the page gave services keep them.
    lacking = [inst for inst in page if 'services' not in inst]
    if lacking:
        driver.fill_services(listing.context, lacking, _cell_id)


def host_statuses(driver, view_builder, listing, listed, known=None):
    """``{uuid: host_status}`` of a page's rows, as Nova's view gets them.

    Nova decides once per host (``server_views.host_statuses``): only the
    first row on each host is made an instance, with its services.

    :param listed: the page's rows, without duplicates.
    :param known: a dict in which the services read are kept, by whose
        they are (``base.joined_services``, :func:`give_services`).
    """
    firsts = {}
    for row in listed:
        if 'host' in row:
            firsts.setdefault(row['host'], row)
    made = {host: rows.IndexedInstance(row, None, [], [])
            for host, row in firsts.items()}
    fill_services(driver, listing, list(made.values()))
    if known is not None:
        for instance in made.values():
            joined = base.joined_services(instance, _cell_id)
            if joined is not None:
                known[joined] = instance.services
    statuses = server_views.host_statuses(view_builder, made)
    return {row['uuid']: statuses[row['host']] for row in listed
            if 'host' in row}


def give_services(page, known):
    """Give the page's instances the services :func:`host_statuses` read.

    Those Nova joins to each (``base.joined_services``), as the driver
    fills them (``RowsDriver.fill_services``); the others are left for it
    to fill.
    """
    for instance in page:
        found = known.get(base.joined_services(instance, _cell_id))
        if found is not None:
            instance.services = found


def page_specs(driver, page, context, uuids, memo=None):
    """The specs Nova's view reads for ``uuids`` of ``page``.

    :param page: its instances, or its rows.
    :param memo: the memo of ``page``'s rows, which hold their spec
        digests (``request_specs.get_by_instance_uuids``), or None.
    """
    with request_specs.digests_from(_spec_digests(driver, page)):
        return request_specs.get_by_instance_uuids(context, uuids,
                                                   memo=memo)


def _spec_digests(driver, page):
    """The page's ``{uuid: its request spec's digest}``, when asked.

    As the page's query read them (``narrow.SPEC``), else from the driver,
    which is asked only if the view reads the specs (from 2.96). None for
    a row whose digest the driver's store does not hold.
    """
    found = {i['uuid']: i.get(narrow.SPEC) for i in page if narrow.SPEC in i}

    def lookup(uuids):
        missing = [uuid for uuid in uuids if uuid not in found]
        if missing:
            found.update(driver.spec_digests(missing))
            found.update((uuid, None) for uuid in missing
                         if uuid not in found)
        return found
    return lookup


class PageVolumes(object):
    """A page's volumes, read from the index once per request.

    The second pass of a page rendered again shows the volumes its first
    pass read, for the same request after the same catch-up. Read again,
    they would be a lookup of a few servers that no later request makes:
    an entry of the driver's page cache that only pushes the pages out.
    """

    def __init__(self, driver, generation=None):
        self._driver = driver
        self._generation = generation
        self._asked = set()
        self._found = {}

    def __call__(self, ctx, uuids):
        """``{uuid: [{'volume_id', 'delete_on_termination'}]}`` of uuids."""
        missing = [uuid for uuid in uuids if uuid not in self._asked]
        if missing:
            self._found.update(self._driver.volumes(
                ctx, missing, generation=self._generation))
            self._asked.update(missing)
        found = collections.defaultdict(list)
        found.update((uuid, self._found[uuid]) for uuid in uuids
                     if uuid in self._found)
        return found


def _shows_host_status(view_builder, listing):
    """Whether the page's documents get ``host_status``.

    It is the one use the view makes of the services Nova's list joins; so
    they are read from the cells only for callers to whom policy shows it
    (by default, admins).
    """
    if 'services' not in (listing.kwargs.get('expected_attrs') or []):
        return False
    if not api_version_request.is_supported(listing.request, '2.16'):
        return False
    return server_views.host_status_unknown_only(
        view_builder, listing.context) is not None


def render_or_hand(driver, view_builder, listing, page, volumes=None):
    """render(), with what the rows cannot give turned into NotRendered."""
    try:
        return render(driver, view_builder, listing, page, volumes=volumes)
    except base.Unservable as e:
        raise NotRendered(str(e))


def render_listed(driver, listing, page, cache):
    """render_or_hand(), a list's documents from ``cache`` where they are.

    A detailed page read with its joins is rendered by Nova's view
    throughout; a list without details is too, but for the documents of
    its servers already in the cache (``PageRender.basic``).
    """
    builder = view.builder()
    if listing.detail or cache is None:
        return render_or_hand(driver, builder, listing, page)
    with page_render(cache, listing):
        return render_or_hand(driver, builder, listing, page)


def project_in_url(listing):
    """The project id the request's URL holds (its links keep it), or ''."""
    return server_views.project_id_in_url(view.builder(), listing.request)


@contextlib.contextmanager
def page_render(cache, listing):
    """Within, the request's documents come from ``cache`` where they are.

    :returns: the request's ``view.PageRender``.
    """
    environ = listing.request.environ
    environ[view.RENDER] = render = view.PageRender(
        cache, listing.request, project_in_url(listing))
    try:
        yield render
    finally:
        environ.pop(view.RENDER, None)
