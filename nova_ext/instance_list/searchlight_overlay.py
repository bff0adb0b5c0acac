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
"""Changes Searchlight may not have yet, checked before its page is served.

The page's own documents are checked against their rows (``searchlight``),
but a change can also put a server on a page that Searchlight leaves it
off: a new server, or one whose state now matches the filters. Capture
(``[nova_ext_index]capture``) marks every changed instance in the index's
pending table; here those marks are compared with Searchlight's documents.
A mark whose document shows its row as it is now is done with and
removed. While one is not, and its row matches the request's filters,
Nova answers the request.
"""

from nova import context as nova_context

from nova_ext.index import db
from nova_ext.index.marks import pending
from nova_ext.instance_list import base
from nova_ext.instance_list import searchlight_query as query

#: The document fields compared with the row: those the driver's queries
#: filter and sort on (searchlight_query.EXACT_FIELDS and SORT_FIELDS).
#: ``image`` is a dict with the ``id`` the queries filter on, or '' for a
#: server booted from a volume, whose row's ``image_ref`` is ''.
COMPARED = {
    'id': 'uuid',
    'tenant_id': 'project_id',
    'user_id': 'user_id',
    'OS-EXT-STS:vm_state': 'vm_state',
}
SOURCE = sorted(set(COMPARED) | {'image', 'created_at', 'updated_at'})


def ids_body(uuids):
    """The search for the documents of ``uuids``, in any project."""
    return {
        'type': query.RESOURCE_TYPE,
        'query': {'terms': {'id': sorted(uuids)}},
        'limit': len(uuids),
        'offset': 0,
        'all_projects': True,
        '_source': SOURCE,
    }


def agrees(source, row):
    """Whether a document shows its row as Searchlight can.

    A deleted (or archived) instance has no document: Searchlight removes
    it. Otherwise the document must be at least as recent as the row, to
    the second documents keep, and carry the row's values of every field
    the driver queries.
    """
    if row is None or row['deleted']:
        return source is None
    if source is None:
        return False
    if query.changed_since(source, row):
        return False
    if (query.second(source.get('created_at')) !=
            query.second(row['created_at'])):
        return False
    image = source.get('image')
    image = image.get('id') if isinstance(image, dict) else image
    if (image or '') != (row['image_ref'] or ''):
        return False
    return all(source.get(field) == row[column]
               for field, column in COMPARED.items())


def check(conf, ctx, filters, records, fetch):
    """Raise Unservable while a change Searchlight lacks shows in the list.

    :param records: ``records(ctx, filters, uuids)`` reads ``uuids`` from
        their cells as the request's own query would: ``{uuid: row}``,
        build requests left out (nova-api lists those itself).
    :param fetch: ``fetch(body)``, the ``[(uuid, document)]`` Searchlight
        answers a search body with.

    With more than ``catch_up_limit`` marks waiting, Nova answers.
    """
    engine = db.get_engine(conf)
    limit = conf.nova_ext_index.catch_up_limit
    taken = pending.take(engine, limit + 1)
    if not taken:
        return
    if len(taken) > limit:
        raise base.Unservable('more than %d changes are not checked against '
                              'Searchlight yet' % limit)
    uuids = sorted(taken)
    # Every mark, in every project and deleted or not, to tell which are
    # done with, whoever asks.
    everyone = nova_context.get_admin_context(read_deleted='yes')
    rows = records(everyone, {}, uuids)
    sources = dict(fetch(ids_body(uuids)))
    behind = [uuid for uuid in uuids
              if not agrees(sources.get(uuid), rows.get(uuid))]
    done = {uuid: taken[uuid] for uuid in uuids if uuid not in behind}
    if done:
        pending.unmark(engine, done)
    if not behind:
        return
    listed = records(ctx, filters, behind)
    if listed:
        raise base.Unservable('searchlight is behind for %s: changed, and '
                              'its document does not show it yet'
                              % ', '.join(sorted(listed)))
