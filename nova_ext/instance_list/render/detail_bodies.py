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
"""Written bodies of detailed lists, kept under what Nova's view reads.

Nova's ``ViewBuilder.detail`` makes a page's body of:

- the request: its URL (the links), microversion, application URL, the
  project its URL holds, whether the caller is an administrator, and what
  policy decides for it (``server_views.detail_decisions``: the flavor's
  extra specs, the extended attributes, which ``host_status``);
- each server's document (``ViewBuilder.show``), which the render cache
  keeps under its row's version, request spec, availability zone and
  volumes (``render_cache.key``);
- what it adds to the documents: each server's ``host_status``, from its
  host's service and the time (``get_instances_host_statuses``), and its
  security groups, from Neutron;
- ``[api]max_limit`` and the options the documents read.

:class:`PageBody` reads all of them for a request before the page is
rendered, each as the view reads it: the page's zones and volumes into
the same memos the view then reads from, the security groups as the
page's one answer (``security_groups``), the host statuses and policy
decisions as Nova's own functions give them. A body kept under the same
reads is the answer, as text: no server is rendered or written.

A page is rendered as before where any of them differs, and its body is
kept only where the view read what the key holds: the flags it passed
to ``show``, and the ``host_status`` and security groups it added to
each document (asked again by Nova's view, policy and time may have
moved in between). A page with a server whose document the render cache
cannot keep (no version, no ``updated_at``, no request spec digest) keeps
no body. Nor does a page whose security groups Nova's view asks Neutron
for itself. A page whose documents were missed in the render cache is
kept once they are rendered from their rows read in full: those rows are
of the versions its key was read with. Where Neutron is asked for the
page's groups (without its feed, or after a change), the key waits for
its answer, which the page's rendering otherwise overlaps.

Nova's view writes each server's document from the request and what it
reads of that server alone, and the page's link from the request, the
number of servers and the last one's uuid. So a page of the same servers
in the same order as the last body given for the same request, some of
which read otherwise (a row written, its host's status, its groups), is
that body with their documents written again in their places
(:meth:`PageBody.patched`), each rendered by Nova's view for those
servers alone, from what the page read: no other server is rendered.

From microversion 2.96 the key holds each server's pinned zone and
scheduler hints as the view is given them (``request_specs.given``): Nova
builds some specs itself (a server group, which it reads again, and whose
deletion drops the ``group`` hint while the spec's text stays the same).
"""

import functools

from nova.api.openstack import api_version_request
from nova import conf as nova_conf
from nova.objects import fields

from nova_ext.instance_list import base
from nova_ext.instance_list import lru
from nova_ext.instance_list.render import encode
from nova_ext.instance_list.render import kept_bodies
from nova_ext.instance_list.render import narrow
from nova_ext.instance_list.render import render_cache
from nova_ext.instance_list.render import rows
from nova_ext.seams.internals import server_views

CONF = nova_conf.CONF


class DetailBodies(kept_bodies.KeptBodies):
    """Written detailed bodies, by the key of what their page reads."""


class _Key(kept_bodies.Key):
    # The request's part: its render part, URL, [api]max_limit, the
    # view's flags and whether down cells are shown.
    REQUEST = 5


_CACHE = lru.PerProcess(DetailBodies, 'detail_body_cache_size')
#: ``cache(conf)``: this process's bodies; None if their size is 0.
cache = _CACHE.of
#: Forget this process's bodies (tests).
reset = _CACHE.reset


#: Where the memo of kept rows keeps their part of a page's key.
_MEMO = 'detail_bodies.rows'


def _rows_part(listed, versions):
    """The rows' part of the page's key, or None if it keeps no body.

    ``(uuids, texts, places, firsts, digest)``: each row's text is its
    uuid, version and spec digest, written as their tuple's repr writes
    them; its place is what Nova's zone lookup reads of it, its host and
    zone (``render_cache.zone``), ``firsts`` the first row of each place,
    and ``digest`` the texts'. None where a row's document is never kept
    (no version, ``updated_at`` or spec digest).

    :raises Unservable: a row holds a stored value Nova's Instance
        refuses, as making the page's instances would
        (``fastpath.instances``).
    """
    texts, places, firsts = [], [], {}
    for row in listed:
        uuid = row['uuid']
        rows.check_refusable(uuid, row)
        version = versions.get(uuid)
        spec = row.get(narrow.SPEC)
        # ``updated_at`` unset is None in the row.
        if version is None or row.get('updated_at') is None or spec is None:
            return None
        texts.append('%r, %r, %r' % (uuid, version, spec))
        place = (row.get('host'), row.get('availability_zone'))
        places.append(place)
        firsts.setdefault(place, row)
    return ([row['uuid'] for row in listed], texts, places, firsts,
            kept_bodies.digest(texts))


class PageBody(object):
    """One detailed page's kept body, looked for and kept.

    Looked for by the page's rows alone: no instance is made of a row but
    the first on each host and zone (their host statuses and zones are
    Nova's answers for those), so that a page answered by its kept body
    costs no instance per server.

    :param bodies: :func:`cache`'s.
    :param builder: the view builder that renders the page.
    :param listing: the request's ``controller.Listing``.
    :param listed: the page's rows, without duplicates, in its order.
    :param versions: ``{uuid: render version}`` of the page's rows.
    :param render: the request's ``view.PageRender``.
    :param volumes: the request's ``fastpath.PageVolumes``.
    :param groups: the page's security groups (``security_groups.start``);
        None: Nova's view asks Neutron itself, and no body is kept.
    :param specs: a function of a context and uuids, the request specs
        Nova's view reads for them, the same for the view within
        ``request_specs.given``.
    :param statuses: a function of the page's rows, ``{uuid:
        host_status}`` as Nova's view gets them
        (``fastpath.host_statuses``).
    :param memo: the memo of rows the driver keeps (``base.Page.memo``),
        their versions read with them: the rows' part of the key is
        worked out once for them. None: for this request alone.
    """

    def __init__(self, bodies, builder, listing, listed, versions, render,
                 volumes, groups, specs, statuses, memo=None):
        self._bodies = bodies
        self._builder = builder
        self._listing = listing
        self._listed = listed
        self._versions = versions
        self._render = render
        self._volumes = volumes
        self._groups = groups
        self._specs = specs
        self._statuses = statuses
        self._memo = memo
        self._key = None
        self._expected = None

    def kept(self):
        """The kept body of this page's reads (a ``Written``), or None."""
        self._key = self._read()
        if self._key is None:
            return None
        found = self._bodies.get(self._key)
        if found is not None:
            self._bodies.given(self._key, found)
        return found

    def patched(self, render_rows):
        """The request's last body, the servers that read otherwise anew.

        Where the page's servers are those of the last body given for the
        same request, in the same order, and some read otherwise (a row
        written, its host's status, groups or volumes), that body with
        their documents in their places, rendered by Nova's view for them
        alone as the whole page would render them; kept. Call after
        :meth:`kept` found none.

        :param render_rows: ``render_rows(positions, written)``:
            ``(body, flags)``, Nova's view's body of the page's servers at
            ``positions`` alone, and the flags it passed to ``show``;
            ``written``, the positions whose rows themselves read otherwise
            (version, spec digest): their documents are new.
        :returns: an ``encode.Written``, or None: the page is rendered
            whole.
        """
        if self._key is None:
            return None
        last = self._bodies.last(self._key)
        if last is None:
            return None
        (uuids, before, rows_before), written = last
        uuids_now, now, rows_now = self._key.shown
        # A body whose documents are not one per server (Nova's view
        # leaves a row out) cannot be patched by position.
        if uuids != uuids_now or len(written.starts) != len(now):
            return None
        changed = [n for n, (was, read) in enumerate(zip(before, now))
                   if was != read]
        if not changed:
            return None
        body, flags = render_rows(changed, [
            n for n in changed if rows_before[n] != rows_now[n]])
        expected = self._expected()
        expected = [expected[n] for n in changed]
        if not self._shows(body, flags, expected, kept=False):
            return None
        patched = written.patched({
            n: encode.item(doc) for n, doc in zip(changed, body['servers'])})
        # Not kept with a document shown as read in full where its row was
        # written again meanwhile, as the whole page would not be.
        if self._shows(body, flags, expected):
            self._bodies.put(self._key, patched)
        self._bodies.patched()
        return patched

    def keep(self, body):
        """``body``, kept written if the view read what its key holds.

        :param body: the page's body as Nova's view made it, every
            document kept in the render cache.
        :returns: what the response is written from.
        """
        if self._key is None or not self._as_read(body):
            return body
        written = encode.written(body, 'servers')
        self._bodies.put(self._key, written)
        return written

    def _read(self):
        """The key of the page's reads, or None if it keeps no body."""
        listed, listing, versions = self._listed, self._listing, self._versions
        if self._groups is None or not listed:
            return None
        request = listing.request
        context = request.environ['nova.context']
        part = base.worked_out(self._memo, _MEMO, functools.partial(
            _rows_part, listed, versions))
        if part is None:
            return None
        uuids, texts, places, firsts, rows_digest = part
        flags = server_views.detail_decisions(self._builder, request)
        unknown_only = flags[2]
        statuses = [None] * len(uuids)
        if unknown_only is not None:
            # Read as the page's render reads them, where the list joins
            # them (fastpath._shows_host_status).
            if 'services' not in (listing.kwargs.get('expected_attrs') or []):
                return None
            statuses = list(map(self._statuses(listed).get, uuids))
            if unknown_only:
                statuses = [status if status == fields.HostStatus.UNKNOWN
                            else None for status in statuses]
        groups = [found or None
                  for found in map(self._groups.read().get, uuids)]
        volumes = self._volumes(context, uuids)
        # Each a column of the page's reads, one per server: a read is
        # Nova's lookup's, the view's or what it is given, as the
        # document shows it.
        columns = (texts, self._zones(context, places, firsts),
                   list(map(volumes.get, uuids)), statuses, groups,
                   *self._shown_specs(request, context, uuids))
        self._expected = functools.partial(_expected, uuids, statuses,
                                           groups)
        # As text: what two reads write alike is the same read, as the
        # digest tells them.
        digest = (rows_digest, kept_bodies.digest(columns[1:]))
        return _Key((self._render.request_part, request.url,
                     CONF.api.max_limit, flags,
                     listing.kwargs.get('cell_down_support', False),
                     len(uuids), digest),
                    functools.partial(_shown, uuids, columns))

    def _zones(self, context, places, firsts):
        """Each server's zone, Nova's lookup asked once per place."""
        zones = self._render.zones
        for place, row in firsts.items():
            if place not in zones:
                render_cache.zone(context, row, zones)
        return list(map(zones.__getitem__, places))

    def _shown_specs(self, request, context, uuids):
        """What the view shows of the servers' specs, as ``_list_view``.

        A column of their pinned zones from 2.96, and one of their hints
        from 2.100: a spec's own, else None, as the view tells them.
        """
        if not api_version_request.is_supported(request, '2.96'):
            return ()
        specs = self._specs(context, uuids)
        zones = {spec.instance_uuid: spec.availability_zone
                 for spec in specs if spec.availability_zone is not None}
        if not api_version_request.is_supported(request, '2.100'):
            return (list(map(zones.get, uuids)),)
        hints = {spec.instance_uuid: spec.scheduler_hints
                 for spec in specs if spec.scheduler_hints is not None}
        return list(map(zones.get, uuids)), list(map(hints.get, uuids))

    def _as_read(self, body):
        """Whether ``body`` shows what the page's key was read with."""
        return self._shows(body, self._render.flags, self._expected())

    def _shows(self, body, flags, expected, kept=True):
        """Whether ``body``, rendered with ``flags``, shows ``expected``.

        :param expected: ``[(uuid, host_status, groups)]``, a document's
            each, as the page's key was read.
        :param kept: and whether each document is one the render cache
            keeps under the version the page read.
        """
        if flags != self._key[3][:2]:
            return False
        servers = body.get('servers')
        if not isinstance(servers, list) or len(servers) != len(expected):
            return False
        for server, (uuid, status, found) in zip(servers, expected):
            if ((kept and type(server) is not encode.Shown) or
                    server.get('id') != uuid or
                    server.get('host_status') != status or
                    server.get('security_groups') != found):
                return False
        return True


def _expected(uuids, statuses, groups):
    """``[(uuid, host_status, groups)]``, each document's, as read."""
    return list(zip(uuids, statuses, groups))


def _shown(uuids, columns):
    """A key's ``shown``: ``(uuids, reads, rows' texts)``.

    Each server's reads as text, the repr of the tuple of its reads, and
    its row's part alone (``_rows_part``). The text holds no object of the
    request (groups, hints) for as long as it is kept.
    """
    return uuids, list(map(repr, zip(*columns))), columns[0]
