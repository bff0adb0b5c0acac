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
"""A detailed page rendered with the render cache and the kept bodies.

The page's rows are read without their joins; its body is the one kept
for what the page reads (``detail_bodies``), else the last body given for
the same request with the documents of the servers that read otherwise
written again, else the page rendered by Nova's view, the documents
from the render cache where they are and the other rows read in full.
"""

import functools

from nova_ext.instance_list.render import detail_bodies
from nova_ext.instance_list.render import fastpath
from nova_ext.instance_list.render import narrow
from nova_ext.instance_list.render import request_specs
from nova_ext.instance_list.render import view


def render_cached(driver, listing, records, cache, bodies=None,
                  groups=None):
    """A detailed page, its documents from ``cache`` where they are.

    ``records`` are the page's rows read without their joins. The page is
    rendered once; rows whose documents were missing are then read in full
    and the page rendered again, those rows by Nova's view.

    :param bodies: ``detail_bodies.cache``'s, or None: with it, a body kept
        for the page's reads is the answer, and a page whose documents
        are all kept in ``cache`` once rendered is kept.
    :param groups: the page's security groups (``security_groups.start``).
    """
    listed = fastpath.distinct(records)
    uuids = [row['uuid'] for row in listed]
    # Rows the driver keeps: the rows' part of the kept body's key is
    # worked out once for them, where their versions are read with them.
    memo = getattr(records, 'memo', None)
    if all(narrow.VERSION in row for row in listed):
        # Read by the page's query (narrow.narrowed).
        versions = {row['uuid']: row[narrow.VERSION] for row in listed}
    else:
        versions = driver.versions(uuids)
        memo = None

    # The services read for the page's host statuses, given to its
    # instances: each cell's are read once for the request.
    services = {}
    made = functools.partial(_instances, driver, listing, versions, services)
    builder = view.builder()
    volumes = fastpath.PageVolumes(driver,
                                   getattr(records, 'generation', None))
    # Nova's view reads the page's specs once: a second pass, or some
    # servers rendered alone, show the specs the page was given.
    with fastpath.page_render(cache, listing) as render, \
            request_specs.given(), request_specs.of_page(uuids):
        kept = None
        if bodies is not None:
            kept = detail_bodies.PageBody(
                bodies, builder, listing, listed, versions, render, volumes,
                groups, functools.partial(fastpath.page_specs, driver, listed,
                                          memo=memo),
                functools.partial(fastpath.host_statuses, driver, builder,
                                  listing, known=services), memo=memo)
            body = kept.kept()
            if body is None:
                body = kept.patched(functools.partial(
                    _render_rows, driver, builder, listing,
                    lambda positions: made([listed[n] for n in positions]),
                    render, volumes, groups))
            if body is not None:
                return body
        page = made(listed)
        body = fastpath.render_or_hand(driver, builder, listing, page,
                                       volumes=volumes)
        if render.missed:
            body = _render_missed(driver, builder, listing, page, render,
                                  volumes)
        # Kept only if every document is a kept one: not that of a row
        # written again while the page was rendered.
        return body if kept is None else kept.keep(body)


def _instances(driver, listing, versions, services, some):
    """Instances of ``some`` of the page's rows, to render them.

    Made only where the page is rendered: its kept body is found by its
    rows alone. Each with its ``render_version`` and the services read
    for the page's host statuses (``fastpath.give_services``).
    """
    instances = fastpath.instances(driver, listing.context, listing, some,
                                   full=False)
    for instance in instances:
        instance.full = False
        instance.render_version = versions.get(instance.uuid)
    fastpath.give_services(instances, services)
    return instances


def _render_rows(driver, builder, listing, made, render, volumes, groups,
                 positions, written=()):
    """``(body, flags)`` of the servers at ``positions`` of the page alone.

    ``made(positions)`` gives their instances.

    Rendered by Nova's view as the whole page would render them, from
    what the page read (``detail_bodies.PageBody.patched``): its zones,
    volumes, request specs (within :func:`render_cached`'s
    ``request_specs.of_page``) and security groups. The flags are those
    the view passed to ``show``.

    :param written: the positions whose rows were written since the body
        patched: their documents are new, which the render cache holds
        only where another page rendered them already. They are read in
        full before the render.
    """
    rows = made(positions)
    uuids = [instance.uuid for instance in rows]
    if written:
        written = set(written)
        _in_full(driver, listing, rows, [
            instance.uuid for n, instance in zip(positions, rows)
            if n in written])
    environ = listing.request.environ
    environ[view.RENDER] = part = render.part()
    try:
        with view.groups_from(groups.part(uuids)):
            body = fastpath.render_or_hand(driver, builder, listing, rows,
                                           volumes=volumes)
            if part.missed:
                body = _render_missed(driver, builder, listing, rows, part,
                                      volumes)
    finally:
        environ[view.RENDER] = render
    return body, part.flags


def _in_full(driver, listing, page, uuids):
    """Put the instances of ``uuids`` in ``page`` read in full instead."""
    full = _full_rows(driver, listing, uuids)
    # A row written again since the page was read is shown as read in
    # full, as Nova would show it then, but its document is not kept
    # under the page's version (nor the page's body with it). Versions
    # never come back: read after the rows, the same version is theirs.
    now = driver.versions(list(full)) if full else {}
    for n, instance in enumerate(page):
        again = full.get(instance.uuid)
        if again is not None:
            again.render_version = (
                instance.render_version
                if now.get(instance.uuid) == instance.render_version
                else None)
            if narrow.SPEC in instance:
                # As read with the page, with its version.
                setattr(again, narrow.SPEC, instance.get(narrow.SPEC))
            if 'services' in instance:
                again.services = instance.services
            page[n] = again


def _render_missed(driver, builder, listing, page, render, volumes):
    """The page rendered again, its missed rows read in full."""
    _in_full(driver, listing, page, render.missed)
    render.again()
    with request_specs.only(render.redo):
        body = fastpath.render_or_hand(driver, builder, listing, page,
                                       volumes=volumes)
    if render.missed:
        raise fastpath.NotRendered(
            'servers %s left the index while the page was rendered' %
            ', '.join(render.missed))
    return body


def _full_rows(driver, listing, uuids):
    """``{uuid: instance}`` of rows read with their joins, deleted or not."""
    context = listing.context.elevated(read_deleted='yes')
    uuids = sorted(set(uuids))
    # The page's changes were applied before it was read. Without a limit,
    # Nova's lister reads batch after batch until one comes back empty (a
    # lookup of the marker, then a query, each with its joins' queries):
    # limited to a row per uuid, it stops after the first.
    records = driver.records(context, {'uuid': uuids}, len(uuids), None,
                             fastpath.query_attrs(listing), ['uuid'], ['asc'],
                             catch_up=False)
    return {i.uuid: i for i in
            fastpath.instances(driver, context, listing, records)}
