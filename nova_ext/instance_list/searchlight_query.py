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
"""Nova's instance list query as a Searchlight search, or the reason not.

Searchlight only picks the page: which instances, in which order. The
documents are those of Searchlight's Nova server plugin
(``searchlight/elasticsearch/plugins/nova``): a server as the compute API
showed it (bulk sync, unversioned notifications) or as a versioned
notification carried it, in the plugin's mapping. Only what that mapping
indexes the way Nova's database compares is translated; everything else
raises :class:`~nova_ext.instance_list.base.Unservable` with the reason, so
that Nova answers. Exact-match strings are compared case-sensitively by
Elasticsearch and case-insensitively by MySQL, so only values that are their
own lowercase, with no surrounding blanks, are translated.
"""

import datetime

from nova.db.main import models
from oslo_utils import timeutils

from nova_ext.instance_list import base

RESOURCE_TYPE = 'OS::Nova::Server'

#: Nova's exact-match filters, and the not_analyzed field that holds the
#: same value in both kinds of document.
EXACT_FIELDS = {
    'uuid': 'id',
    'project_id': 'tenant_id',
    'user_id': 'user_id',
    'image_ref': 'image.id',
    'vm_state': 'OS-EXT-STS:vm_state',
}

#: Filters Nova applies that the documents cannot answer, and why.
UNTRANSLATABLE = {
    'cleaned': 'documents do not record it',
    'system_metadata': 'documents do not carry it',
    'metadata': 'Nova matches any key and any value, and the plugin '
                'indexes metadata values analyzed',
    'instance_type_id': "documents carry the flavor's public id, not the "
                        'database id Nova filters on',
    'task_state': 'the plugin maps it dynamically (analyzed)',
    'host': 'the plugin maps it dynamically (analyzed)',
    'locked': 'documents synced below compute API 2.9 lack it',
    'changes-since': "documents' updated time falls back to created_at "
                     "where Nova's updated_at is NULL",
    'changes-before': "documents' updated time falls back to created_at "
                      "where Nova's updated_at is NULL",
    'tags': 'the plugin indexes tags analyzed',
    'tags-any': 'the plugin indexes tags analyzed',
    'not-tags': 'the plugin indexes tags analyzed',
    'not-tags-any': 'the plugin indexes tags analyzed',
}

#: Sort keys whose document field orders exactly as Nova orders the column.
#: created_at is only exact where Nova keeps whole seconds, as documents do;
#: the driver checks that (see NEEDS_WHOLE_SECONDS).
SORT_FIELDS = {
    'uuid': 'id',
    'created_at': 'created_at',
    'vm_state': 'OS-EXT-STS:vm_state',
}
NEEDS_WHOLE_SECONDS = frozenset(['created_at'])

#: The Nova column of each sort field, to check a document against its row.
SORT_COLUMNS = {field: key for key, field in SORT_FIELDS.items()}

#: What the driver reads of a document, besides its sort fields: ``id``
#: names the instance, ``updated_at`` tells how recent the document is.
SOURCE_FIELDS = frozenset(['id', 'updated_at'])

_MATCH_NOTHING = {'bool': {'must_not': [{'match_all': {}}]}}


class Plan(object):
    """One translated list query: everything but the marker position."""

    def __init__(self, clauses, must_not, sort, limit):
        self.clauses = clauses
        self.must_not = must_not
        self.sort = sort
        self.limit = limit

    @property
    def sort_fields(self):
        return [field for field, _ in self.sort]

    @property
    def needs_whole_seconds(self):
        return any(f in NEEDS_WHOLE_SECONDS for f in self.sort_fields)

    @property
    def source(self):
        return sorted(SOURCE_FIELDS.union(self.sort_fields))

    def body(self, marker_values=None):
        """The /v1/search body, after the marker if its values are given."""
        clauses = list(self.clauses)
        if marker_values is not None:
            clauses.append(after(self.sort, marker_values))
        query = {}
        if clauses:
            query['filter'] = clauses
        if self.must_not:
            query['must_not'] = self.must_not
        return {
            'type': RESOURCE_TYPE,
            'query': {'bool': query} if query else {'match_all': {}},
            'sort': [{field: {'order': d}} for field, d in self.sort],
            'limit': self.limit,
            'offset': 0,
            'all_projects': True,
            '_source': self.source,
        }


def marker_body(marker, fields):
    """The search for the marker's document, in any project."""
    return {
        'type': RESOURCE_TYPE,
        'query': {'term': {'id': marker}},
        'limit': 1,
        'offset': 0,
        'all_projects': True,
        '_source': sorted(SOURCE_FIELDS.union(fields)),
    }


def after(sort, values):
    """Documents after ``values`` in ``sort`` order, as Nova's paginate.

    (k1 beyond v1) or (k1 == v1 and k2 beyond v2) or ...; the last key is
    the unique ``id``, so this is Elasticsearch's search_after.
    """
    should = []
    for i, (field, direction) in enumerate(sort):
        clause = [{'term': {f: v}}
                  for (f, _), v in zip(sort[:i], values[:i])]
        op = 'gt' if direction == 'asc' else 'lt'
        clause.append({'range': {field: {op: values[i]}}})
        should.append({'bool': {'filter': clause}})
    return {'bool': {'should': should, 'minimum_should_match': 1}}


def _canonical(value):
    return isinstance(value, str) and value and value == value.strip() \
        and value == value.lower()


def _exact(key, value):
    field = EXACT_FIELDS[key]
    values = value if isinstance(value, (list, tuple, set, frozenset)) \
        else None
    if values is not None and not values:
        # Nova short-circuits an empty IN to no rows.
        return _MATCH_NOTHING
    for v in (values if values is not None else [value]):
        if not _canonical(v):
            raise base.Unservable(
                'filter %s=%r: Elasticsearch would compare it '
                'case-sensitively, Nova case-insensitively' % (key, v))
    if values is not None:
        return {'terms': {field: sorted(values)}}
    return {'term': {field: value}}


def _is_regex_filter(key):
    # Nova runs a regular expression on every other key that is an
    # attribute of its Instance model (not a Python property), and ignores
    # the rest, as this must too.
    attr = getattr(models.Instance, key, None)
    return attr is not None and type(attr).__name__ != 'property'


def filter_query(ctx, filters):
    """(filter clauses, must_not clauses) for Nova's filters dict."""
    filters = dict(filters)
    if 'deleted' not in filters or filters.pop('deleted'):
        raise base.Unservable('deleted instances: Searchlight removes their '
                              'documents')
    must_not = []
    if not filters.pop('soft_deleted', False):
        must_not.append({'term': {EXACT_FIELDS['vm_state']: 'soft-delete'}})
    if filters.pop('hidden', False):
        raise base.Unservable('hidden instances have no documents of their '
                              'own')
    if not ctx.is_admin:
        # As Nova's query does, whatever the filters say.
        if ctx.project_id:
            filters['project_id'] = ctx.project_id
        else:
            filters['user_id'] = ctx.user_id
    reasons = ['%s (%s)' % (key, UNTRANSLATABLE[key])
               for key in sorted(filters) if key in UNTRANSLATABLE]
    reasons += ['%s (Nova matches it as a regular expression)' % key
                for key in sorted(filters)
                if key not in UNTRANSLATABLE and key not in EXACT_FIELDS and
                _is_regex_filter(key)]
    if reasons:
        raise base.Unservable('filters: %s' % '; '.join(reasons))
    clauses = [_exact(key, filters[key])
               for key in sorted(filters) if key in EXACT_FIELDS]
    return clauses, must_not


def sort_order(sort_keys, sort_dirs):
    """[(field, direction)] in Nova's global order, uuid last."""
    if not sort_keys:
        raise base.Unservable("Nova's default order ends with cell-local "
                              'ids, which documents do not carry')
    if len(sort_dirs or []) != len(sort_keys):
        raise base.Unservable('sort directions do not pair with sort keys')
    bad = [k for k in sort_keys if k not in SORT_FIELDS]
    if bad:
        raise base.Unservable('sort keys %s: no document field orders as '
                              'Nova does' % ', '.join(bad))
    if any(d not in ('asc', 'desc') for d in sort_dirs):
        raise base.Unservable('unknown sort direction in %s' % sort_dirs)
    keys, dirs = list(sort_keys), list(sort_dirs)
    if 'uuid' not in keys:
        # Nova's InstanceSortContext tie-breaker across cells.
        keys.append('uuid')
        dirs.append('asc')
    return [(SORT_FIELDS[k], d) for k, d in zip(keys, dirs)]


def plan(ctx, filters, limit, sort_keys, sort_dirs):
    """Translate one list query.

    :raises Unservable: naming what cannot be answered exactly.
    """
    if limit is None:
        raise base.Unservable('unlimited list')
    clauses, must_not = filter_query(ctx, filters)
    sort = sort_order(sort_keys, sort_dirs)
    return Plan(clauses, must_not, sort, limit)


def second(value):
    """A row's time, or a document's (ISO 8601), to the whole second, UTC.

    Documents keep whole seconds (the API's and the notifications' format),
    so that is as finely as a row and its document can be compared.
    """
    if isinstance(value, str):
        try:
            value = timeutils.parse_isotime(value)
        except ValueError:
            return None
    if not isinstance(value, datetime.datetime):
        return None
    return timeutils.normalize_time(value).replace(microsecond=0)


def changed_since(source, row):
    """Whether ``row`` changed after its document was written.

    To the second documents keep; also when either time is unknown.
    """
    written = second(source.get('updated_at'))
    changed = second(row['updated_at'] or row['created_at'])
    return written is None or changed is None or changed > written
