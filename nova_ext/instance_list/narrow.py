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
"""Nova's instance list query over the index, reading a few columns.

With the render cache, the rows of a page are needed only to know which
servers are on it, in what order, and what the documents' keys and Nova's
per-page additions read (host, availability zone, ...): the documents
come from the cache. Nova's ``instance_get_all_by_filters_sort`` still
builds the query (every filter, sort and marker rule is Nova's), but
within :func:`narrowed` the list query it runs on the index selects only
those columns and hands back plain dicts instead of ORM objects, which is
where most of its time goes for a page of a thousand servers.

Only the list query is narrowed (see :func:`_is_list_query`); lookups
such as the marker's are not. Rows to render are read in full afterwards.
"""

import contextlib
import contextvars

from nova.db.main import models
from sqlalchemy.engine import result as sa_result
from sqlalchemy import event
from sqlalchemy import orm

#: Columns every narrowed row has: what rows.IndexedInstance reads, the
#: render cache's keys, host_status and the collection links.
COLUMNS = ('id', 'uuid', 'deleted', 'project_id', 'user_id', 'host',
           'availability_zone', 'vm_state', 'task_state', 'hidden',
           'access_ip_v4', 'access_ip_v6', 'created_at', 'updated_at',
           'deleted_at', 'launched_at', 'terminated_at')
_DONE = 'nova_ext_narrowed'
_ACTIVE = contextvars.ContextVar(_DONE, default=None)
#: List queries narrowed in this process (a test checks it still happens
#: with the Nova installed).
narrowed_queries = 0


@contextlib.contextmanager
def narrowed(sort_keys):
    """Within, the instance list query reads COLUMNS and the sort keys."""
    columns = set(COLUMNS) | set(sort_keys or ())
    token = _ACTIVE.set(tuple(sorted(columns)))
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def _is_list_query(state):
    """Whether this is the list query of instance_get_all_by_filters_sort.

    That one selects whole Instance rows, ordered, with no loader options
    (the page is read without joins). The marker's lookup (Nova's
    ``_build_instance_get``) is ordered too, but always joins; a lookup of
    some columns (``instance_get_by_sort_filters``) selects no entity.
    """
    statement = state.statement
    described = getattr(statement, 'column_descriptions', ())
    return (len(described) == 1 and
            described[0].get('type') is models.Instance and
            bool(getattr(statement, '_order_by_clauses', None)) and
            not getattr(statement, '_with_options', ()) and
            not state.is_relationship_load and not state.is_column_load)


@event.listens_for(orm.Session, 'do_orm_execute')
def _narrow(state):
    columns = _ACTIVE.get()
    if (columns is None or not state.is_select or
            state.execution_options.get(_DONE) or
            not _is_list_query(state)):
        return None
    global narrowed_queries
    narrowed_queries += 1
    table = models.Instance.__table__
    narrow = state.statement.with_only_columns(
        *[table.c[name] for name in columns])
    rows = [dict(row._mapping) for row in state.invoke_statement(
        statement=narrow, execution_options={_DONE: True})]
    # What Query.all() hands Nova's code: one plain dict per row, where it
    # would be one Instance.
    result = sa_result.IteratorResult(
        sa_result.SimpleResultMetaData(['Instance']),
        iter([(row,) for row in rows]))
    result._attributes = result._attributes.union(
        {'is_single_entity': True})
    return result
