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
"""Pages of index rows, kept for as long as the index is unchanged.

Nova's list query over the index gives the same rows for the same query
for as long as nothing the query reads changes: the index's rows, which
its generation names (``nova_ext.index.generation``), and the request's
context (whose project a non-admin lists, which deleted rows it reads).
So the rows of a page listed at one generation answer the same query at
that generation again, without querying.

What a list reads outside the index is still read per request: the
cells' health and the changes recorded but not applied (before the
generation is read), the marker's instance mapping, and the cells of the
deleted servers a page shows (``CatchUp.check_archived``).

Only the narrowed rows of a rendered page are kept (``render.narrow``):
flat dicts of a few columns, copied in and out by the driver; and the
volumes of a rendered page (``index_reads``), read from the index too.
"""

from nova_ext.instance_list import lru

#: Under which key a non-admin's list is scoped (Nova's query reads it).
_CONTEXT = ('is_admin', 'project_id', 'user_id', 'read_deleted')


_CACHE = lru.PerProcess(lru.LRUCache)


def cache(conf):
    """This process's cache, sized by ``page_cache_size``; None if 0."""
    return _CACHE.get(conf.nova_ext_instance_list.page_cache_size)


def reset():
    """Forget this process's cache (tests)."""
    _CACHE.reset()


def key(generation, ctx, query):
    """The key of a page listed at ``generation`` for ``query``.

    :param generation: ``generation.read()``'s pair.
    :param ctx: the request context the query runs with.
    :param query: every other argument of the query, hashable; values
        that hold a dict or list (the filters) are compared by ``repr``:
        equal filters written differently only miss.
    """
    return (generation,
            tuple(getattr(ctx, name, None) for name in _CONTEXT),
            repr(query))
