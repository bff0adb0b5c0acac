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
server and ``[api]max_limit``. Loading each server's request spec (from
microversion 2.96) and its network info can fail, and Nova's answer with
it; what they read is told by the row's version (network info,
``loadable``) and its request spec's digest (``request_specs``). So the
text of such a body is the same for any two requests that have the same
URL and the render cache's request part (microversion, administrator or
not, the project the URL holds, the options the links read) and the same
``[api]max_limit``, and whose pages have the same rows, each
read by the page's query with its version and its spec's digest: the
same uuids and names, in the same order, of the same versions and specs.

A body is kept written under that key and answers the next such request
without a server rendered or written again. Everything a list reads per
request is still read first, the page's rows included (from the page
cache where they are kept): Nova's validation and policy, the build
requests, the cells' check and the changes recorded. A row without a
uuid, a name (a down cell's server), a version or a spec digest keeps its
page's body from being kept.
"""

import array
import hashlib

from nova import conf as nova_conf

from nova_ext.instance_list import lru
from nova_ext.instance_list.render import encode
from nova_ext.instance_list.render import narrow
from nova_ext.instance_list.render import render_cache

CONF = nova_conf.CONF


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
    uuids, names and spec digests, and of their versions, each the 8 bytes
    of its float (written out as text, a thousand of them cost more than
    the rest of the key).

    :param records: the page's rows as the driver gave them, before they
        are rendered.
    """
    uuids, names, versions, specs = [], [], [], []
    for record in records:
        uuid, name = record.get('uuid'), record.get('display_name')
        version, spec = record.get(narrow.VERSION), record.get(narrow.SPEC)
        if uuid is None or name is None or version is None or spec is None:
            return None
        uuids.append(uuid)
        names.append(name)
        versions.append(version)
        specs.append(spec)
    digest = hashlib.blake2b(repr((uuids, names, specs)).encode('utf-8'),
                             digest_size=16)
    if all(type(version) is float for version in versions):
        digest.update(b'd')
        digest.update(array.array('d', versions).tobytes())
    else:
        digest.update(b'r')
        digest.update(repr(versions).encode('utf-8'))
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
