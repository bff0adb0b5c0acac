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
"""Nova's instance list query, as it runs in a SQLAlchemy ORM session.

``nova.db.main.api.instance_get_all_by_filters_sort`` builds its query
(every filter, sort and marker rule) and runs it in an ORM session, as an
ordered select of whole ``Instance`` rows. While :func:`attach_narrowing`
is in place, a ``do_orm_execute`` listener on every ORM session of the
process runs that query for a few columns instead, and hands Nova's code
one plain dict per row where it would have had an ORM object. Telling that
query from the others, and handing back such a result, reads SQLAlchemy's
private attributes of statements and results.

Installed by the seam that needs it, when it attaches (the ``servers-list``
API handler, see ``nova_ext.instance_list.render``); never at import.

The contract test is
``nova_ext.tests.unit.seams.test_internals_orm``.
"""

import collections
import threading

from nova.db.main import models
from oslo_log import log as logging
from sqlalchemy.engine import result as sa_result
from sqlalchemy import event
from sqlalchemy import orm

from nova_ext.seams import internals

LOG = logging.getLogger(__name__)

POINT = "the narrowing of Nova's instance list query"

_DONE = 'nova_ext_narrowed'
_LOCK = threading.Lock()
# The function giving the columns to read, or None; set while attached.
_COLUMNS = None
#: List queries narrowed in this process (a test checks it still happens
#: with the Nova installed).
narrowed_queries = 0

#: A column of another table of the same database, read beside each row
#: under ``name``: ``column``, from the row of its table whose ``key``
#: equals the instance's uuid (an outer join: None where there is none).
Beside = collections.namedtuple('Beside', 'name column key')


def _check():
    internals.check(POINT)


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


def _narrow(state):
    columns = _COLUMNS() if _COLUMNS is not None else None
    if (columns is None or not state.is_select or
            state.execution_options.get(_DONE) or
            not _is_list_query(state)):
        return None
    global narrowed_queries
    narrowed_queries += 1
    table = models.Instance.__table__
    beside = [column for column in columns if isinstance(column, Beside)]
    names = [name for name in columns if not isinstance(name, Beside)]
    if 'id' not in names:
        names.append('id')
    narrow = state.statement.with_only_columns(
        *[table.c[name] for name in names],
        *[b.column.label(b.name) for b in beside])
    joined = set()
    for b in beside:
        # Joined to the query's own FROM, after Nova's joins (tags); once
        # for all the columns read of one table.
        if b.key.table not in joined:
            joined.add(b.key.table)
            narrow = narrow.outerjoin(b.key.table, b.key == table.c.uuid)
    # Query.all() hands Nova's code each Instance once, however many rows
    # of a join (tags-any) hold it: Nova's list counts a batch after that.
    rows, seen = [], set()
    for row in state.invoke_statement(statement=narrow,
                                      execution_options={_DONE: True}):
        if row.id not in seen:
            seen.add(row.id)
            rows.append(dict(row._mapping))
    # What Query.all() hands Nova's code: one plain dict per row, where it
    # would be one Instance.
    result = sa_result.IteratorResult(
        sa_result.SimpleResultMetaData(['Instance']),
        iter([(row,) for row in rows]))
    result._attributes = result._attributes.union(
        {'is_single_entity': True})
    return result


def attach_narrowing(columns):
    """Have Nova's instance list query read ``columns()``, when not None.

    Idempotent; the latest ``columns`` is the one asked.

    :param columns: a function of nothing, called for each list query:
        the names of the ``instances`` columns to read, and any
        :class:`Beside`, or None to read the query as Nova wrote it.
    :returns: whether the listener is installed; not on a Nova nova_ext
        was not tested with (logged), where the query reads whole rows.
    """
    global _COLUMNS
    if not internals.tested(POINT, LOG, 'server list pages are read whole'):
        return False
    with _LOCK:
        if _COLUMNS is None:
            event.listen(orm.Session, 'do_orm_execute', _narrow)
        _COLUMNS = columns
    return True


def detach_narrowing():
    """Remove the listener (tests, reloads)."""
    global _COLUMNS
    with _LOCK:
        if _COLUMNS is not None:
            event.remove(orm.Session, 'do_orm_execute', _narrow)
        _COLUMNS = None


def columns():
    """What the list query reads if run now: columns, or None if whole."""
    return _COLUMNS() if _COLUMNS is not None else None


def narrowing():
    """Whether the listener is installed in this process."""
    return _COLUMNS is not None
