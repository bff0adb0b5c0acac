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
"""Written bodies of lists without details, kept per request and rows.

Nova's view of ``GET /servers`` shows of each server its uuid, its name
and links made from the request (``render_cache.listed_key``), and of the
page a link to the next one, made from the request's URL, its last
server and ``[api]max_limit``. Nova's list also builds the Instance of
each server it shows, whose fields may refuse a stored access IP
(``rows``), and from microversion 2.96 loads its request spec; either
can fail, and Nova's answer with it. The request spec read is told by
its digest (``request_specs``). Each server's network info can fail
too; it is loaded before the body is looked up, whenever the server's
rows changed since this process last loaded it (``loadable``), whatever
the body. So the text of such a body is the same for any two requests
that have the same URL and the render cache's request part
(microversion, administrator or not, the project the URL holds, the
options the links read) and the same ``[api]max_limit``, and whose pages
have the same rows as far as the body reads them: the same uuids and
names, in the same order, with the same stored access IPs and spec
digests. The rest of a row (its state, its metadata, its host) does not
reach the body: a server stopped, started or given metadata leaves its
page's body as it was.

A body is kept written under that key and answers the next such request
without a server rendered or written again. Everything a list reads per
request is still read first, the page's rows included (from the page
cache where they are kept): Nova's validation and policy, the build
requests, the cells' check, the changes recorded and the network info of
the rows written since. A row without a uuid, a name (a down cell's
server), its stored access IPs or a spec digest keeps its page's body
from being kept.

Nova's view writes the document of each server from the request and that
server alone, and the link to the next page from the request, the number
of rows and the last one's uuid. So a page whose rows differ from those
of the last body given for the same request by some names only (servers
renamed) is written as that body with the documents of those servers
rendered again in their places; the others are not rendered.
"""

import functools
import operator

from nova import conf as nova_conf

from nova_ext.instance_list import base
from nova_ext.instance_list import lru
from nova_ext.instance_list.render import encode
from nova_ext.instance_list.render import kept_bodies
from nova_ext.instance_list.render import narrow
from nova_ext.instance_list.render import render_cache
from nova_ext.instance_list.render import rows

CONF = nova_conf.CONF

#: The columns of a row that its body reads, besides the stored texts
#: Nova's Instance may refuse (``rows.REFUSABLE``): what it shows and its
#: request spec's digest. A row without any keeps its page's body from
#: being kept. The uuid first, the name second: :func:`_renamed` reads
#: them so.
_SHOWN = ('uuid', 'display_name', narrow.SPEC)
#: Where a page's memo keeps the rows' part of its body's key.
_MEMO = 'page_bodies.key'


class PageBodies(kept_bodies.KeptBodies):
    """Written bodies by :func:`key`, and the last of each request."""


_CACHE = lru.PerProcess(PageBodies, 'page_cache_size')
#: ``cache(conf)``: this process's bodies, as many as the page cache's
#: pages; None if 0.
cache = _CACHE.of
#: Forget this process's bodies (tests).
reset = _CACHE.reset


def key(request, project_in_url, records):
    """The key of a list's body for ``records``, or None.

    The rows are kept as a BLAKE2b digest (16 bytes), so that a key costs
    little to keep and to compare whatever the page: of the text of their
    uuids, names and spec digests, and of their stored access IPs where
    any row has one.

    :param records: the page's rows as the driver gave them
        (``narrow.LISTED``), before they are rendered. The rows' part of
        the key is worked out once for rows the driver keeps
        (``base.Page.memo``).
    """
    shown = base.worked_out(getattr(records, 'memo', None), _MEMO,
                            functools.partial(_shown, records))
    if shown is None:
        return None
    shown, digest = shown
    return kept_bodies.Key(
        (render_cache.request_key(request, project_in_url), request.url,
         CONF.api.max_limit, len(records), digest), shown)


def _shown(records):
    # ``(the columns the body reads, their digest)``, or None.
    try:
        shown = [list(map(operator.itemgetter(column), records))
                 for column in _SHOWN]
        refusable = [list(map(operator.itemgetter(column), records))
                     for column in rows.REFUSABLE]
    except KeyError:
        return None
    if any(None in column for column in shown):
        return None
    # Most servers have no access IP: the columns are written out only
    # for a page where a row has one (five lists, else three: no text of
    # one kind is a text of the other).
    if any(column.count(None) != len(column) for column in refusable):
        shown.extend(refusable)
    return shown, kept_bodies.digest(shown)


def body(bodies, key, render, render_rows=None):
    """The kept body of ``key``, else a body written and kept.

    The body written is ``render()``'s, or where the last body given for
    the same request is of the same rows but for some names, that body
    with the documents of those rows alone rendered again
    (:func:`_patched`).

    :param bodies: :func:`cache`'s, or None: nothing is kept.
    :param key: :func:`key`'s, or None: nothing is kept.
    :param render_rows: ``render_rows(positions)``: the documents
        ``render()`` gives the rows at ``positions`` of the page, rendered
        for those rows alone; None: a page is rendered whole.
    :returns: a body for ``encode.dumps``.
    """
    if bodies is None or key is None:
        return render()
    kept = bodies.get(key)
    if kept is not None:
        bodies.given(key, kept)
        return kept
    written = None
    if render_rows is not None:
        written = _patched(bodies.last(key), key, render_rows)
        if written is not None:
            bodies.patched()
    if written is None:
        written = encode.written(render(), 'servers')
    bodies.put(key, written)
    return written


def _patched(last, key, render_rows):
    """The body ``last`` with the documents of renamed rows written anew.

    Nova's view writes the document of each server of a list from the
    request and that server alone, in the order of the rows, and the
    link to the next page from the request, the number of rows and the
    last one's uuid. So where the rows have the same uuids in the same
    order, the same spec digests and stored access IPs, the body is the
    last one with the documents of the rows whose name changed in their
    places, each rendered for its row as the whole page would render it
    (and refused, or handed to Nova, as that page would be).

    :param last: ``PageBodies.last``'s.
    :returns: an ``encode.Written``, or None: the page is rendered whole.
    """
    if last is None:
        return None
    shown, written = last
    renamed = _renamed(shown, key.shown)
    # A body whose documents are not one per row (Nova's view leaves a
    # row out) cannot be patched by position.
    if not renamed or len(written.starts) != len(key.shown[0]):
        return None
    docs = render_rows(renamed)
    if len(docs) != len(renamed):
        # Not seen: the one row Nova's view leaves out is left out of the
        # last body too, which the check above refused.
        return None
    return written.patched({n: encode.item(doc)
                            for n, doc in zip(renamed, docs)})


def _renamed(before, now):
    """The positions of the rows whose name alone tells ``now`` apart.

    :param before: what the rows of a body showed (``Key.shown``).
    :param now: what the rows of the page show now.
    :returns: a list of positions, or None if more than names changed.
    """
    if (len(before) != len(now) or before[0] != now[0] or
            before[2:] != now[2:]):
        return None
    return [n for n, (was, name) in enumerate(zip(before[1], now[1]))
            if was != name]
