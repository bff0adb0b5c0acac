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
"""Online data migrations that link records to compute object ids.

Nova 34's ``populate_instance_compute_id`` selects every instance whose
``compute_id`` is NULL, unordered, so instances that can never be linked
(no host: shelved-offloaded, failed builds, cell0) fill each batch and a
``--max-count`` run reports work found and none done, forever. Here the
batch is selected from linkable records only: a join on exactly one live
target (a compute node, or the nova-compute service), ordered by id.
Records that cannot be linked are never found; :meth:`Linker.unlinkable`
reports them with the reason. Nothing ambiguous is guessed.

Every write is a compare-and-set (``WHERE <column> IS NULL``) so that two
runs, or a compute service linking the same record, never overwrite each
other; only the rows actually changed are counted as done.

The SQL work is done on a SQLAlchemy connection, or for writes a session
(whose statements the index's change capture sees), so that the logic can
be tested on any database holding Nova's tables.
"""

import collections

from oslo_log import log as logging
import sqlalchemy as sa

from nova_ext.object_migrations import base

LOG = logging.getLogger(__name__)

#: Why a record is not linked (see :func:`classify`).
LINKABLE = 'linkable'
NO_KEY = 'no_host'
AMBIGUOUS = 'ambiguous'
RENAMED = 'renamed_host'
DELETED_TARGET = 'deleted_target'
NOT_FOUND = 'not_found'
REASONS = (NO_KEY, AMBIGUOUS, RENAMED, DELETED_TARGET, NOT_FOUND)

# (record column, target column) pairs are matched for equality; the last
# pair is the "name" that survives a host rename (the node name), if any.
Spec = collections.namedtuple('Spec', [
    'record', 'column', 'keys', 'target', 'target_where', 'renamable'])


def _tables():
    from nova.db.main import models

    return (models.Instance.__table__, models.Migration.__table__,
            models.ComputeNode.__table__, models.Service.__table__)


def specs(tables=None):
    """``{migration name: Spec}`` over Nova's tables, or ``tables``."""
    instances, migrations, nodes, services = tables or _tables()
    return {
        'instance-compute-id': Spec(
            instances, 'compute_id',
            (('host', 'host'), ('node', 'hypervisor_hostname')),
            nodes, (), True),
        'migration-dest-compute-id': Spec(
            migrations, 'dest_compute_id',
            (('dest_compute', 'host'), ('dest_node', 'hypervisor_hostname')),
            nodes, (), True),
        'compute-node-service-id': Spec(
            nodes, 'service_id', (('host', 'host'),), services,
            (services.c.binary == 'nova-compute',), False),
    }


def classify(key, live, deleted, renamed_names):
    """Why a record with ``key`` is (not) linkable; pure.

    :param key: the record's key values, e.g. ``(host, node)``.
    :param live: ``{key: [target ids]}`` of live (not deleted) targets.
    :param deleted: keys of deleted targets.
    :param renamed_names: the last key element of every live target, when
        it identifies the target across a host rename (node names), else
        an empty set.
    """
    if any(k is None for k in key):
        return NO_KEY
    ids = live.get(tuple(key), ())
    if len(ids) == 1:
        return LINKABLE
    if len(ids) > 1:
        return AMBIGUOUS
    if key[-1] in renamed_names:
        return RENAMED
    if tuple(key) in deleted:
        return DELETED_TARGET
    return NOT_FOUND


def _unlinked(spec):
    r = spec.record
    return sa.and_(r.c[spec.column].is_(None), r.c.deleted == 0)


def _linkable_query(spec, host=None):
    """(record id, target id) of unlinked records with one live target.

    :param host: only the records of this compute host (the first key:
        an instance's host, a migration's destination, a node's host).
    """
    r, t = spec.record, spec.target
    on = sa.and_(t.c.deleted == 0, *spec.target_where,
                 *[t.c[tc] == r.c[rc] for rc, tc in spec.keys])
    where = [_unlinked(spec), *[r.c[rc].is_not(None) for rc, _ in spec.keys]]
    if host is not None:
        where.append(r.c[spec.keys[0][0]] == host)
    return (sa.select(r.c.id, sa.func.min(t.c.id).label('target_id'))
            .select_from(r.join(t, on))
            .where(*where)
            .group_by(r.c.id)
            .having(sa.func.count(t.c.id) == 1))


def candidates(conn, spec, max_count=None, host=None):
    query = _linkable_query(spec, host).order_by(spec.record.c.id)
    if max_count is not None:
        query = query.limit(max_count)
    return [(row.id, row.target_id) for row in conn.execute(query)]


def link(conn, spec, pairs):
    """Compare-and-set each record; returns how many rows changed."""
    r = spec.record
    done = 0
    for record_id, target_id in pairs:
        result = conn.execute(
            sa.update(r)
            .where(r.c.id == record_id, r.c[spec.column].is_(None))
            .values({spec.column: target_id}))
        done += result.rowcount
    return done


def migrate(conn, spec, max_count, host=None):
    pairs = candidates(conn, spec, max_count, host)
    return len(pairs), link(conn, spec, pairs)


def remaining(conn, spec):
    """How many records are unlinked but linkable."""
    sub = _linkable_query(spec).subquery()
    return conn.execute(sa.select(sa.func.count()).select_from(sub)).scalar()


def _target_index(conn, spec):
    t = spec.target
    cols = [t.c[tc] for _, tc in spec.keys]
    live, deleted, names = collections.defaultdict(list), set(), set()
    rows = conn.execute(sa.select(t.c.id, t.c.deleted, *cols)
                        .where(*spec.target_where))
    for row in rows:
        key = tuple(row[2:])
        if row.deleted:
            deleted.add(key)
        else:
            live[key].append(row.id)
            if spec.renamable:
                names.add(key[-1])
    return live, deleted, names


def unlinkable(conn, spec, limit=None):
    """Unlinked records that cannot be linked: ``[(id, key, reason)]``."""
    r = spec.record
    live, deleted, names = _target_index(conn, spec)
    query = (sa.select(r.c.id, *[r.c[rc] for rc, _ in spec.keys])
             .where(_unlinked(spec)).order_by(r.c.id))
    if spec.record.name == 'migrations':
        # A migration without a destination node has nothing to link to
        # yet (Nova fills dest_node when it claims on the destination).
        query = query.where(r.c.dest_node.is_not(None))
    # A renamed host: its node lives on under another host name while the
    # old host name has no live target left.
    live_hosts = {k[:-1] for k in live}
    out = []
    for row in conn.execute(query):
        key = tuple(row[1:])
        reason = classify(key, live, deleted,
                          set() if key[:-1] in live_hosts else names)
        if reason != LINKABLE:
            out.append((row.id, key, reason))
            if limit is not None and len(out) >= limit:
                break
    return out


def spec(name):
    return specs()[name]


class Linker(base.ObjectMigration):
    """One compute-id link, as a Nova online data migration."""

    name = None

    def _run(self, context, fn, *args, write=False):
        from nova.db.main import api as main_db

        # The context is targeted at one cell by the caller.
        manager = main_db.get_context_manager(context)
        mode = manager.writer if write else manager.reader
        with mode.using(context) as session:
            # Writes through the session, as Nova's own: the index's
            # change capture sees a session's statements, not those of a
            # bare connection, and compute_id is part of what it holds.
            return fn(session if write else session.connection(),
                      spec(self.name), *args)

    def __call__(self, context, max_count, host=None):
        """Link at most ``max_count`` records (Nova's contract).

        :param host: only the records of this compute host (host_links.py).
        """
        found, done = self._run(context, migrate, max_count, host,
                                write=True)
        if found != done:
            LOG.info('%(name)s: %(lost)d of %(found)d records were linked '
                     'by someone else meanwhile',
                     {'name': self.name, 'lost': found - done,
                      'found': found})
        return found, done

    def remaining(self, context):
        return self._run(context, remaining)

    def unlinkable(self, context, limit=None):
        return self._run(context, unlinkable, limit)


class InstanceComputeId(Linker):
    """Fill ``instances.compute_id`` from the instance's host and node."""

    name = 'instance-compute-id'


class MigrationDestComputeId(Linker):
    """Fill ``migrations.dest_compute_id`` from dest_compute/dest_node."""

    name = 'migration-dest-compute-id'


class ComputeNodeServiceId(Linker):
    """Fill ``compute_nodes.service_id`` from the host's nova-compute."""

    name = 'compute-node-service-id'


ALL = (InstanceComputeId, MigrationDestComputeId, ComputeNodeServiceId)
