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
"""

import hashlib
import operator

from nova import conf as nova_conf

from nova_ext.instance_list import lru
from nova_ext.instance_list.render import encode
from nova_ext.instance_list.render import narrow
from nova_ext.instance_list.render import render_cache
from nova_ext.instance_list.render import rows

CONF = nova_conf.CONF

#: The columns of a row that its body reads, besides the stored texts
#: Nova's Instance may refuse (``rows.REFUSABLE``): what it shows and its
#: request spec's digest. A row without any keeps its page's body from
#: being kept.
_SHOWN = ('uuid', 'display_name', narrow.SPEC)


class PageBodies(lru.LRUCache):
    """Written bodies by :func:`key`."""


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
        (``narrow.LISTED``), before they are rendered.
    """
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
    digest = hashlib.blake2b(repr(shown).encode('utf-8'), digest_size=16)
    return (render_cache.request_key(request, project_in_url),
            request.url, CONF.api.max_limit, len(records), digest.digest())


def body(bodies, key, render):
    """The kept body of ``key``, else ``render()``'s, kept written.

    :param bodies: :func:`cache`'s, or None: nothing is kept.
    :param key: :func:`key`'s, or None: nothing is kept.
    :returns: a body for ``encode.dumps``.
    """
    if bodies is None or key is None:
        return render()
    kept = bodies.get(key)
    if kept is not None:
        return kept
    written = encode.Written(encode.dumps(render()))
    bodies.put(key, written)
    return written
