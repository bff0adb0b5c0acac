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
"""Change capture: which instances a Nova database write changes.

Notifications say after the fact, and not always, that an instance
changed. Capture learns it from the write itself: in every Nova process
where it is attached (``nova_ext.seams.db_writes``), each ORM
session that is about to write a row a server list shows or filters on
first marks the instance pending in the index, *held*, and only then
writes; once the session has committed (or rolled back), the marks are
released and renewed. A list request re-reads marked instances from their
cells before it reads the index (see ``nova_ext.instance_list.catch_up``),
and a held mark is not removed by such a read: from the moment a reader
can see the change, even one that reads what is not committed yet, a
list shows it, as with Nova's own path.

This module says *what* changed and records it; the listeners that call
it are installed by the entry point.
"""

import time

from oslo_log import log as logging
import sqlalchemy as sa
from sqlalchemy import orm
from sqlalchemy.sql import operators

from nova_ext.index import db
from nova_ext.index.marks import holders
from nova_ext.index.marks import pending
from nova_ext.index.marks import process

LOG = logging.getLogger(__name__)

#: Tables whose rows a server list shows or filters on, and the column
#: holding the instance uuid each row belongs to: the cell tables the
#: index mirrors (``nova_ext.index.apply.source``), and the API database's
#: instance mappings (which cell, or archived), build requests and request
#: specs (whose digest the index keeps).
TRACKED = {
    'instances': 'uuid',
    'instance_extra': 'instance_uuid',
    'instance_info_caches': 'instance_uuid',
    'instance_metadata': 'instance_uuid',
    'instance_system_metadata': 'instance_uuid',
    'instance_faults': 'instance_uuid',
    'pci_devices': 'instance_uuid',
    'tags': 'resource_id',
    'block_device_mapping': 'instance_uuid',
    'security_group_instance_association': 'instance_uuid',
    'instance_mappings': 'instance_uuid',
    'build_requests': 'instance_uuid',
    'request_specs': 'instance_uuid',
}

#: The key of ``Session.info`` under which a session keeps the holds it
#: is to release: ``{uuid: (holder, token)}``.
HELD_KEY = 'nova_ext_held_instances'

#: And the instances whose marks the index did not take in time.
UNRECORDED_KEY = 'nova_ext_unrecorded_instances'


class Unknown(Exception):
    """A write to a tracked table whose instances cannot be told."""


def _uuid_of(obj, column):
    state = sa.inspect(obj)
    value = state.dict.get(column)
    if value is None and column not in state.dict:
        # Expired (a deleted object, or one reloaded lazily): its
        # committed value is what the row held.
        value = state.attrs[column].loaded_value
        if value is orm.attributes.NO_VALUE:
            value = getattr(obj, column)
    return value


def from_flush(session):
    """The instance uuids of a session's new, dirty and deleted objects.

    In ``before_flush``, what the flush will write; in ``after_flush``,
    what it wrote.
    """
    found = set()
    for obj in list(session.new) + list(session.dirty) + list(
            session.deleted):
        column = TRACKED.get(getattr(obj, '__tablename__', None))
        if column is None:
            continue
        uuid = _uuid_of(obj, column)
        if uuid is not None:
            found.add(uuid)
    return found


def _table(statement):
    table = getattr(statement, 'table', None)
    name = getattr(table, 'name', None)
    if name is None:
        # update(Model), delete(Model): the entity's table.
        desc = getattr(statement, 'entity_description', None) or {}
        table = desc.get('table')
        name = getattr(table, 'name', None)
    return table, name


def _values(params, column):
    """The ``column`` values of the rows an INSERT's parameters give.

    A multi-row ``insert().values([...])`` names them ``column_m0``,
    ``column_m1``, ... .
    """
    if isinstance(params, dict):
        params = [params]
    found = set()
    for row in params or ():
        values = [v for k, v in row.items() if k == column or (
            k.startswith(column + '_m') and k[len(column) + 2:].isdigit())]
        if not values or None in values:
            raise Unknown('a row without %s' % column)
        found.update(values)
    return found


def _from_criteria(clause, column):
    """uuids a WHERE clause pins ``column`` to, or None if it does not.

    Only a conjunction in which ``column = value`` or ``column IN
    (values)`` appears pins it: anything else (an OR, a comparison with a
    column) could match rows of other instances.
    """
    if clause is None:
        return None
    if isinstance(clause, sa.sql.elements.BooleanClauseList):
        if clause.operator is not operators.and_:
            return None
        for child in clause.clauses:
            found = _from_criteria(child, column)
            if found is not None:
                return found
        return None
    if not isinstance(clause, sa.sql.elements.BinaryExpression):
        return None
    left, right = clause.left, clause.right
    if getattr(left, 'name', None) != column or not isinstance(
            right, sa.sql.elements.BindParameter):
        return None
    value = right.effective_value
    if clause.operator is operators.eq and isinstance(value, str):
        return {value}
    if clause.operator is operators.in_op and isinstance(
            value, (list, tuple, set, frozenset)):
        return set(value)
    return None


def from_statement(state):
    """The instance uuids an ORM-executed INSERT, UPDATE or DELETE changes.

    Called from ``do_orm_execute`` before the statement runs. A statement
    that names its instances (an insert's rows, a WHERE clause on the uuid
    column) is read; any other is asked of the database first, with the
    same WHERE clause (``DELETE FROM block_device_mapping WHERE id = ...``),
    or for every row where it has none.

    :returns: a set of uuids; empty for a statement on no tracked table.
    :raises Unknown: an insert whose rows do not say their instance.
    """
    statement = state.statement
    table, name = _table(statement)
    column = TRACKED.get(name)
    if column is None:
        return set()
    if state.is_insert:
        # Rows passed to execute(), or else those of insert().values().
        return _values(state.parameters or
                       statement.compile().construct_params(), column)
    found = _from_criteria(statement.whereclause, column)
    if found is not None:
        return found
    query = sa.select(table.c[column])
    if statement.whereclause is not None:
        # Without one the statement writes every row: SQLAlchemy would
        # make ``where(None)`` a WHERE NULL, which selects none.
        query = query.where(statement.whereclause)
    return {row[0] for row in state.session.execute(
        query, state.parameters or {}) if row[0] is not None}


def hold(conf, session, uuids):
    """Before ``session`` writes rows of ``uuids``: mark them, held.

    Each instance once per transaction. Held marks stay in the index until
    released (:func:`release`), so that a list request that re-reads an
    instance before the commit re-reads it again after.
    """
    # {uuid: (holder, token)} of the holds this transaction releases.
    held = session.info.setdefault(HELD_KEY, {})
    uuids = set(uuids).difference(held)
    if not uuids:
        return
    batcher = process.get_batcher(conf)
    lease = holders.get_lease(conf)
    # An earlier transaction's hold whose release is not recorded yet
    # serves this one too.
    taken = batcher.take_back_releases(uuids, lease.name)
    held.update(taken)
    uuids.difference_update(taken)
    if not uuids:
        return
    # Written by this thread, not the batcher's, and waiting for the index's
    # lock inside SQLite rather than by sleeping: Nova's transaction is
    # open, and a thread that waits for another, or sleeps, lets others run
    # (eventlet), which must not happen while a connection is inside a
    # transaction that others may share.
    now = time.time()
    token = lease.token()
    if not batcher.stalled:
        timeout = conf.nova_ext_index.capture_timeout
        try:
            engine = db.get_engine(conf, in_transaction=True)
            name = lease.ensure(engine, timeout, cooperative=False)
            pending.mark(engine, {u: (now, now) for u in uuids},
                         [(u, name, token) for u in uuids],
                         timeout=timeout, cooperative=False)
            held.update((u, (name, token)) for u in uuids)
            return
        except Exception as e:
            LOG.warning('nova_ext index cannot hold the marks of %d '
                        'instances (%s: %s); keeping them and retrying',
                        len(uuids), type(e).__name__, e)
            batcher.stall()
    # Kept and retried by the batcher; until then this process's lists are
    # Nova's (process.held()), and the writes that follow do not wait here
    # (release() fences them).
    session.info.setdefault(UNRECORDED_KEY, set()).update(uuids)
    name = lease.name
    held.update((u, (name, token)) for u in uuids)
    batcher.add_all(sorted(uuids), now,
                    holds=[(u, name, token) for u in uuids])


def release(conf, session):
    """After ``session`` committed (or rolled back): release its holds.

    The release renews the marks, and is not waited for: until it is
    committed, the held marks make every list request re-read their
    instances, as committed now. Not those of a name this process lost
    (``holders.Lease``): this process's lists are Nova's until the
    release is recorded.
    """
    held = session.info.pop(HELD_KEY, None)
    unrecorded = session.info.pop(UNRECORDED_KEY, None)
    if held:
        lease = holders.get_lease(conf)
        covered = all(lease.current(name) for name, _token in held.values())
        batcher = process.get_batcher(conf)
        batcher.add_all(
            sorted(held), time.time(),
            releases=[(u, name, token)
                      for u, (name, token) in held.items()],
            covered=covered)
        if unrecorded:
            fence(lease, batcher, unrecorded)


def fence(lease, batcher, uuids):
    """Hold back a write whose changes of ``uuids`` are not recorded.

    Nova goes on once no other process serves lists from the index
    without knowing that this one has changes unrecorded
    (``holders.Lease.fence``), or once they are recorded. After the
    commit, when it no longer holds Nova's locks.
    """
    waited = lease.fence(lambda: not uuids.intersection(batcher.held()))
    if waited >= holders.FENCE_POLL:
        LOG.warning('nova_ext index: a Nova write waited %.1f s for the '
                    'other processes to stop listing servers from the '
                    'index without its changes of %d instances, which the '
                    'index could not take', waited, len(uuids))
