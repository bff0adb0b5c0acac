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
"""A kept page brought up to date by reading again only what changed.

A page is the first ``limit`` rows, in the query's order, of those that
match its filters and come after its marker. Nova's order is total: its
sort keys end with ``created_at`` and ``id`` (``process_sort_params``),
and the index id is unique. So where only some instances changed, the
page they leave behind is told by those instances alone, read again with
the page's own query (its filters, sort and marker, restricted to their
uuids, by Nova's ``uuid`` filter):

- a row of the page that still matches, with the same value of every
  sort key, keeps its place: its new row replaces it;
- on a page that ends before ``limit`` (the last), a row that no longer
  matches leaves it;
- a changed instance that matches and was not on the page stays off it if
  it comes after the page's last row (read in the same query, which
  orders them);
- anything else (a row that moved, a row that left a full page, one that
  comes in, a server on it twice) and the page is listed anew.

The database orders the rows in every case: nothing is compared but for
equality.
"""

import copy

from nova_ext.instance_list import page_cache
from nova_ext.seams.internals import instance_lister

#: More changed instances than this, and the page is listed anew.
AT_MOST = 100


def _restricted(filters, uuids):
    """``filters`` that match only ``uuids`` too; None if not told."""
    restricted = copy.deepcopy(filters)
    if 'uuid' in filters:
        # Nova's own uuid filter (an IP filter answered by Neutron sets
        # one): the instances in both.
        held = filters['uuid']
        if isinstance(held, str):
            held = [held]
        if not isinstance(held, (list, tuple, set)):
            return None
        uuids = [u for u in uuids if u in held]
    restricted['uuid'] = sorted(uuids)
    return restricted


def _repeats(rows):
    """Whether a server is on ``rows`` twice.

    Nova's query joins the tags of a ``tags-any`` filter: a server with
    several is a row for each, and how many it has may change.
    """
    return len(set(row['uuid'] for row in rows)) != len(rows)


def bring(driver, ctx, query, rows, changed):
    """``rows``, a page of ``query``, with ``changed`` instances read again.

    :param query: the page's ``(filters, limit, marker, attrs, sort_keys,
        sort_dirs, cell_down_support, columns)``, filters as the request
        gave them, before Nova's query code.
    :param rows: the page's rows, as kept.
    :param changed: uuids of the instances written since.
    :returns: the rows of the page now, or None if it is to be listed:
        ``rows`` itself, with its memo, where none of them changed; else
        new ``page_cache.Rows``, with a memo of their own.
    """
    (filters, limit, marker, attrs, sort_keys, sort_dirs,
     cell_down_support, _columns) = query
    if len(changed) > AT_MOST or marker in changed:
        return None
    keys = instance_lister.sort_keys(sort_keys, sort_dirs)
    if _repeats(rows) or any(k not in row for row in rows[:1] for k in keys):
        return None

    def listed(uuids):
        """``[row]`` of ``uuids`` in the query's order; None if untold."""
        restricted = _restricted(filters, uuids)
        if restricted is None:
            return None
        if not restricted['uuid']:
            return []
        # Nova's lister reads batch after batch, each past the row the
        # last ended on (a lookup of that row, then a query), until it has
        # its limit or one comes back empty: with a limit of as many rows
        # as uuids asked, it stops after the first where each is found.
        # A tags-any filter joins a server to each of its tags: the limit
        # would count those rows, and could cut a server's repeats off.
        limit = None if 'tags-any' in filters else len(restricted['uuid'])
        found = driver.list_rows(ctx, restricted, limit, marker, attrs,
                                 sort_keys, sort_dirs, cell_down_support)
        if found is None or _repeats(found):
            return None
        return found

    full = limit is not None and len(rows) >= limit
    last = rows[-1]['uuid'] if rows else None
    place = {row['uuid']: i for i, row in enumerate(rows)}
    asked = set(changed)
    if full and last is not None and not asked <= place.keys():
        # Read with them: whether a changed instance not on the page comes
        # before or after it is the database's order.
        asked.add(last)
    found = listed(asked)
    if found is None:
        return None
    now = {r['uuid']: r for r in found}
    position = {r['uuid']: i for i, r in enumerate(found)}
    kept, gone, came = list(rows), set(), []
    for uuid in changed:
        i, row = place.get(uuid), now.get(uuid)
        if i is None:
            if row is not None:
                came.append(uuid)
        elif row is None:
            if full:
                return None
            gone.add(uuid)
        elif any(rows[i][k] != row[k] for k in keys):
            return None
        else:
            kept[i] = row
    if came:
        if not full or last not in position:
            return None
        if any(position[uuid] < position[last] for uuid in came):
            return None
    if not place.keys() & changed:
        # Not one of its rows was written since: what was worked out from
        # them holds (``base.Page.memo``).
        return rows
    return page_cache.Rows(row for row in kept if row['uuid'] not in gone)
