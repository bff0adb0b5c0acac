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
"""Pages of index rows, kept and brought up to date from the index's changes.

Nova's list query over the index gives the same rows for the same query
for as long as nothing the query reads changes: the index's rows, which
its generation names (``nova_ext.index.generation``), and the request's
context (whose project a non-admin lists, which deleted rows it reads).
So the rows of a page listed at one generation answer the same query at
that generation again, without querying.

At a later generation, the page is brought up to date from the instances
written since (``generation.changes``): only those are read again, and
only where that alone tells the page (``page_patch``); else it is listed
anew. The reads must all have seen one generation, so the generation is
read again after them: where it moved, the instances written since are
read again, up to ``BRINGS`` times.

What a list reads outside the index is still read per request: the
cells' health and the changes recorded but not applied (before the
generation is read), the marker's instance mapping, and the cells of the
deleted servers a page shows (``CatchUp.check_archived``).

Only the narrowed rows of a rendered page are kept (``render.narrow``):
flat dicts of a few columns, copied in by the driver and handed out as
they are (``base.Page``), with a memo of what the renderer worked out
from them (``base.Page.memo``); and
the volumes of a rendered page (``index_reads``), read from the index
too.
"""

import collections

from nova_ext import direct_reads
from nova_ext.index import generation
from nova_ext.instance_list import lru

#: Under which key a non-admin's list is scoped (Nova's query reads it).
_CONTEXT = ('is_admin', 'project_id', 'user_id', 'read_deleted')
#: How many times a page is brought up to date while writes move the
#: generation under it, before it is listed anew.
BRINGS = 3
#: How many pairs of generations :func:`changes` keeps what was written
#: between.
CHANGES_KEPT = 64


class PageCache(lru.LRUCache):
    """Pages by query; ``outcomes`` counts how :func:`current` went."""

    #: ``kept`` (as listed), ``brought`` (up to date from changes),
    #: ``listed`` (kept, but to be listed anew), ``missed`` (none kept).
    OUTCOMES = ('kept', 'brought', 'listed', 'missed')

    def __init__(self, size):
        super().__init__(size)
        self.outcomes = collections.Counter()
        #: ``{(then, now): frozenset of uuids}``: the instances written
        #: between two generations, as read once (:func:`changes`).
        self.changes = lru.LRUCache(CHANGES_KEPT)

    def counts(self):
        """Every outcome's count, since the process started."""
        return {outcome: self.outcomes[outcome] for outcome in self.OUTCOMES}


_CACHE = lru.PerProcess(PageCache, 'page_cache_size')
#: ``cache(conf)``: this process's cache; None if its size is 0.
cache = _CACHE.of
#: Forget this process's cache (tests).
reset = _CACHE.reset


def key(ctx, query):
    """The key of a page listed for ``query``.

    :param ctx: the request context the query runs with.
    :param query: every other argument of the query, hashable; values
        that hold a dict or list (the filters) are compared by ``repr``:
        equal filters written differently only miss.
    """
    return (tuple(getattr(ctx, name, None) for name in _CONTEXT),
            repr(query))


class Rows(tuple):
    """A page's rows as kept, and ``memo``: what was worked out from them.

    A value brought up to date (``page_patch``) is kept as new rows, with
    a memo of its own, where any of its rows changed.
    """

    def __new__(cls, rows):
        self = super().__new__(cls, rows)
        self.memo = {}
        return self


def keep(pages, key, now, value):
    """Keep ``value``, read after generation ``now`` was, under ``key``.

    The reads may have seen a later state than ``now``'s: the instances
    that changed in between are among those :func:`current` reads again.

    :param value: what is kept: a page's :class:`Rows`, or its volumes.
    :returns: ``value``.
    """
    pages.put(key, (now, value))
    return value


def current(pages, key, now, engine, bring):
    """What is kept under ``key``, as of generation ``now``; None if not.

    :param now: the generation's pair, read by the request after its
        catch-up (or with it, ``generation.settled``). A page brought up
        to date is the index's state at that generation, or at a later
        one where the generation moved while the page was brought to it.
    :param bring: ``bring(value, uuids)``: ``value`` with the instances
        of ``uuids`` read again, or None where that cannot tell it.
    """
    return current_at(pages, key, now, engine, bring)[0]


def current_at(pages, key, now, engine, bring):
    """As :func:`current`: ``(value, the generation it is the state at)``.

    ``(None, None)`` where nothing is kept. The generation is ``now``, or
    the later one the page was brought to: what a request reads beside
    the page at that generation is of the same state.
    """
    kept = pages.get(key)
    if kept is None:
        pages.outcomes['missed'] += 1
        return None, None
    then, value = kept
    if then == now:
        pages.outcomes['kept'] += 1
        return value, now
    for _ in range(BRINGS):
        # None from another index (or one restored from a backup), or for
        # a page kept by a request that began after this one.
        changed = changes(pages, engine, then, now)
        if changed is None:
            break
        value = bring(value, changed)
        if value is None:
            break
        # Read at ``now`` if the generation has not moved since: else some
        # instances not read again may have changed after it, and are
        # read again from there.
        moved = generation.read(engine, direct_reads.first)
        if moved == now:
            value = keep(pages, key, now, value)
            pages.outcomes['brought'] += 1
            return value, now
        then, now = now, moved
    pages.outcomes['listed'] += 1
    return None, None


def changes(pages, engine, then, now):
    """``generation.changes(engine, then, now)``, read once per process.

    A page and its volumes, and the pages of other queries, are brought
    between the same generations. What was written between two of them
    never changes once the later one is read: a move's changes are
    written in its transaction, and each pair's token names one state of
    one index. Only an answer is kept, not the None of a read that could
    not tell.
    """
    found = pages.changes.get((then, now))
    if found is None:
        found = generation.changes(engine, then, now, direct_reads.rows)
        if found is not None:
            found = frozenset(found)
            pages.changes.put((then, now), found)
    return found
