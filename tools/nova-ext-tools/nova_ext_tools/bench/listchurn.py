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
"""The ``churn`` path of ``nova-ext-bench list``: lists after Nova's writes.

``cached`` times a page none of whose servers changed since the render
cache last rendered them. ``churn`` is the same path, but before each of
its requests, outside the request's timing, the query is listed once (so
the render cache is warm, whatever was changed for the other queries,
whose pages show mostly the same servers), and then a tenth of the
servers the query's page shows (``listquery.CHURN_SHARE``, chosen at
random with a fixed seed, another set each time) are renamed in their
cell databases through Nova's own database API (``instance_update``, one
transaction per cell), with change capture (``[nova_ext_index]capture``)
attached in that process, as in a conductor: capture marks them pending
in the index. The
timed request then pays what a list pays after Nova's writes: the catch-up
(``nova_ext.instance_list.catch_up``) re-reads the marked servers from
their cells into the index, and the render cache renders them again.

A server's new name is its synced name with a suffix (``-cN``): it sorts
where the old one did, either way (no other server's name starts with
it), so a page keeps its servers whatever the sort key.

Every database of a benchmark cloud is an SQLite file that every process
of the cloud shares (Nova's harness, native threads), so what a churn
child writes, the children forked after it and Nova's path read. Nothing
may outlive the child: the other paths' first answers were made before
it, and are compared with Nova's made after every child. So the cloud's
process takes a :class:`Snapshot` of every cloned server's name and
``updated_at`` before the first churn child; each churn child puts back,
at its start and at its end, every server that differs from it
(:func:`restore`, through capture too), applies every mark, and reads
anew into the index the servers whose rows there are not the snapshot's
(the index keeps the churned rows, whose ``updated_at`` is newer), so
that the index holds the rows it was synced with and nothing is pending. The
cloud's process then checks (:func:`settled`); a child killed before its
end (isolate.py) is repaired there, in a child of its own, before the
next child is forked. A restored row is the synced row byte for byte, and
the render cache lives in each child's memory only.
"""

import functools
import os
import random
import time

from nova import context as nova_context
from nova.db.main import api as main_db
from nova.db.main import models as main_models
from nova import objects
from oslo_config import cfg
import sqlalchemy as sa

from nova_ext.index.apply import refresh
from nova_ext.index import db as index_db
from nova_ext.index.marks import holders
from nova_ext.index.marks import pending
from nova_ext.index.marks import process
from nova_ext.index.repair import sync
from nova_ext.index import schema
from nova_ext.seams import db_writes

from nova_ext_tools.bench import isolate
from nova_ext_tools.bench import listquery
from nova_ext_tools.bench import listtime
from nova_ext_tools.bench import measure

CONF = cfg.CONF
INSTANCES = main_models.Instance.__table__
#: Marks a restore applies per pass, and the passes it may take.
APPLY_BATCH, APPLY_PASSES = 500, 400
#: Seconds a change may wait for capture's marks to be committed.
MARK_TIMEOUT = 60
#: Seconds a repair child may take.
REPAIR_TIMEOUT = 1800


class Snapshot(object):
    """Every cloned server's name and ``updated_at``, per cell.

    :param exclude: uuids left out: the booted template, which the
        cloud's own compute may write to while the benchmark runs.
    """

    def __init__(self, exclude=()):
        ctx = nova_context.get_admin_context()
        self.rows = {}
        for cell_uuid, cell in _cells(ctx).items():
            rows = _rows(ctx, cell)
            for uuid in exclude:
                rows.pop(uuid, None)
            self.rows[cell_uuid] = rows

    def index_drift(self):
        """The uuids whose row in the index is not the snapshot's."""
        book = schema.INSTANCES
        held = {}
        with index_db.get_engine(CONF).connect() as conn:
            for row in conn.execute(sa.select(book.c.uuid,
                                              book.c.source_updated_at)):
                held[row.uuid] = row.source_updated_at
        return sorted(uuid for rows in self.rows.values()
                      for uuid, (_name, updated_at) in rows.items()
                      if held.get(uuid) != updated_at)

    def drift(self, ctx):
        """``{cell uuid: {uuid: (name, updated_at)}}`` that differ now.

        The values are the snapshot's: those to put back.
        """
        cells = _cells(ctx)
        found = {}
        for cell_uuid, want in self.rows.items():
            now = _rows(ctx, cells[cell_uuid])
            differ = {uuid: values for uuid, values in want.items()
                      if now.get(uuid) != values}
            if differ:
                found[cell_uuid] = differ
        return found


def _cells(ctx):
    return {cell.uuid: cell for cell in sync.cells(ctx)
            if cell.uuid != objects.CellMapping.CELL0_UUID}


def _rows(ctx, cell):
    """``{uuid: (display_name, updated_at)}`` of a cell's live servers."""
    c = INSTANCES.c
    query = sa.select(c.uuid, c.display_name, c.updated_at).where(
        c.deleted == 0)
    with nova_context.target_cell(ctx, cell) as cctxt:
        with main_db.get_engine(context=cctxt).connect() as conn:
            return {row.uuid: (row.display_name, row.updated_at)
                    for row in conn.execute(query)}


def _capture():
    """Attach change capture in this process (a forked child)."""
    CONF.set_override('capture', True, group='nova_ext_index')
    if not db_writes.attach(CONF):
        raise RuntimeError('change capture could not be attached')


def _write(ctx, cells, changes):
    """``{cell uuid: {uuid: values}}`` written as Nova writes, and marked.

    One transaction per cell, which capture marks as one.
    """
    for cell_uuid, by_uuid in sorted(changes.items()):
        with nova_context.target_cell(ctx, cells[cell_uuid]) as cctxt:
            with main_db.get_context_manager(cctxt).writer.using(cctxt):
                for uuid, values in sorted(by_uuid.items()):
                    main_db.instance_update(cctxt, uuid, values)
    # Capture waits a bounded time for its marks; a list finding one
    # still unrecorded in this process would be handed to Nova.
    if process.held() and not process.get_batcher(CONF).flush(
            MARK_TIMEOUT):
        raise RuntimeError('capture could not record the changes of %d '
                           'servers' % len(process.held()))


def _release_dead_holds(engine):
    """Give back the holds of writers that died before their release.

    Only churn children write with capture in a benchmark cloud, one at
    a time, and each releases its holds before its writes return: a hold
    found when none runs is one a killed child left. Left held, its mark
    would be re-read by every list and never removed.
    """
    h = schema.HOLDERS.c
    with engine.connect() as conn:
        rows = conn.execute(sa.select(h.holder, h.beats).where(
            h.pid != os.getpid())).all()
    released = set()
    for holder, beats in rows:
        released |= holders.release(engine, holder, beats) or set()
    return len(released)


def _apply_all(ctx):
    """Apply every pending mark, as the index worker would."""
    engine = index_db.get_engine(CONF)
    skip = set()
    for _ in range(APPLY_PASSES):
        if not pending.count(engine):
            return
        isolate.heartbeat()
        if not refresh.process_pending(ctx, CONF, limit=APPLY_BATCH,
                                       skip=skip):
            break
    raise RuntimeError('%d marks still pending after a churn restore (%d '
                       'failed)' % (pending.count(engine), len(skip)))


def _read_anew(ctx, uuids):
    """Make the index hold the rows the cells hold of ``uuids`` now.

    A restored row's ``updated_at`` is older than that of the churned row
    the index holds, which the index keeps (it never moves an instance
    back in time): the rows are dropped from the index and read anew.
    """
    engine = index_db.get_engine(CONF)
    for start in range(0, len(uuids), APPLY_BATCH):
        batch = uuids[start:start + APPLY_BATCH]
        refresh.remove(engine, batch)
        _totals, failed = refresh.refresh(ctx, CONF, batch)
        if failed:
            raise RuntimeError('%d restored servers could not be read '
                               'again' % len(failed))


def restore(snapshot):
    """Put back every server that differs from ``snapshot``; apply all.

    In a child with capture attached, and no other writer with capture
    running. Afterwards the cells hold the snapshot's values, the index
    the rows read from them, and nothing is pending.

    :returns: the number of servers put back.
    """
    ctx = nova_context.get_admin_context()
    _release_dead_holds(index_db.get_engine(CONF))
    drift = snapshot.drift(ctx)
    _write(ctx, _cells(ctx), {
        cell_uuid: {uuid: {'display_name': name, 'updated_at': updated_at}
                    for uuid, (name, updated_at) in rows.items()}
        for cell_uuid, rows in drift.items()})
    _apply_all(ctx)
    _read_anew(ctx, snapshot.index_drift())
    left = snapshot.drift(ctx)
    if left:
        raise RuntimeError('%d servers still differ after a churn restore'
                           % sum(len(rows) for rows in left.values()))
    stale = snapshot.index_drift()
    if stale:
        raise RuntimeError('the index holds other rows than the cells of %d '
                           'servers after a churn restore' % len(stale))
    return sum(len(rows) for rows in drift.values())


class Churn(object):
    """In a churn child: the changes made before each churn request.

    Made once the child is a fresh process (``listtime.fresh_process``);
    :meth:`close` leaves the databases as the snapshot has them.

    :param call: ``listcloud.path_call`` of the cloud.
    """

    def __init__(self, snapshot, call):
        _capture()
        self.snapshot = snapshot
        self.call = call
        self.ctx = nova_context.get_admin_context()
        self.cells = _cells(self.ctx)
        self.cell_of = {uuid: cell_uuid
                        for cell_uuid, rows in snapshot.rows.items()
                        for uuid in rows}
        self.random = random.Random(listquery.CHURN_SEED)
        #: ``{query name: (servers shown, uuids that may change)}``.
        self.pages = {}
        self.changes = 0
        self.changed = []
        self.seconds = []
        # What a child killed earlier may have left (see settled()).
        self.restored = [restore(snapshot)]

    def _warm(self, query):
        """List ``query`` through the churn path; its page, learnt once.

        The request fills the render cache, as ``cached`` has it before
        its timed requests; the page's servers are the first request's.
        """
        response, _ = self.call(listquery.CHURN, query)
        if response.status_code != 200:
            raise RuntimeError('%s answered %d: %s' % (
                query.url, response.status_code, response.text[:300]))
        if query.name not in self.pages:
            shown = [server['id'] for server in response.json()['servers']]
            self.pages[query.name] = (
                len(shown), [u for u in shown if u in self.cell_of])
        return self.pages[query.name]

    def before(self, path, query):
        """Change a share of ``query``'s page, if ``path`` is CHURN."""
        if path != listquery.CHURN:
            return
        # The render cache warm, a tenth of the page changed, nothing else:
        # the servers changed for the other queries since this one's last
        # request (most pages show the same servers) are listed first,
        # untimed.
        shown, candidates = self._warm(query)
        count = min(len(candidates),
                    max(1, int(round(shown * listquery.CHURN_SHARE))))
        started = time.perf_counter()
        self.changes += 1
        changes = {}
        for uuid in self.random.sample(candidates, count):
            cell_uuid = self.cell_of[uuid]
            name = self.snapshot.rows[cell_uuid][uuid][0]
            changes.setdefault(cell_uuid, {})[uuid] = {
                'display_name': '%s-c%d' % (name, self.changes)}
        _write(self.ctx, self.cells, changes)
        self.seconds.append(time.perf_counter() - started)
        self.changed.append(count)

    def close(self):
        """Put everything back; what was changed, for the results."""
        self.restored.append(restore(self.snapshot))
        return {'requests': len(self.changed),
                'servers': sum(self.changed),
                'per_request': max(self.changed) if self.changed else 0,
                'change_ms': measure.summary(self.seconds, 1000.0)
                if self.seconds else None,
                'restored': self.restored}


def answers(queries, call, snapshot):
    """The churn path's first answers, each beside Nova's of that state.

    In a fresh child of its own (``listanswers.first_answers``): for each
    query, the page is changed, answered through the churn path, then by
    Nova's path, so that both see the same databases.

    :returns: ``[(query name, (status, body, served, ms, Nova's status,
        Nova's body))]``, each body as Latin-1 text.
    """
    churn = Churn(snapshot, call)
    out = []
    try:
        for query in queries:
            churn.before(listquery.CHURN, query)
            started = time.perf_counter()
            response, served = call(listquery.CHURN, query)
            ms = (time.perf_counter() - started) * 1000.0
            want, _ = call(listquery.STOCK, query)
            out.append((query.name, (
                response.status_code, response.content.decode('latin-1'),
                served, ms, want.status_code,
                want.content.decode('latin-1'))))
            isolate.heartbeat()
    finally:
        churn.close()
    return out


def _repair(snapshot):
    listtime.fresh_process()
    _capture()
    return restore(snapshot)


def settled(snapshot, usage=None):
    """In the cloud's process, after a churn child: nothing of it left.

    If servers differ from ``snapshot`` or marks are pending (the child
    was killed before its end), a child of its own restores them.

    :param usage: as for ``isolate.call``.
    :returns: the servers that child put back; 0 if none was needed.
    """
    ctx = nova_context.get_admin_context()
    differ = sum(len(rows) for rows in snapshot.drift(ctx).values())
    differ += len(snapshot.index_drift())
    marks = pending.count(index_db.get_engine(CONF))
    if not differ and not marks:
        return 0
    print('churn: %d servers changed and %d marks pending after a churn '
          'child; restoring them' % (differ, marks))
    return isolate.call_again_if_stalled(
        'churn repair', functools.partial(_repair, snapshot),
        REPAIR_TIMEOUT, usage, listtime.CHILD_STALL)


def summary(runs):
    """What the churn children changed, for the results; None if none ran.

    :param runs: the results of the churn path's timed children.
    """
    changes = [run['changes'] for run in runs if 'changes' in run]
    if not changes:
        return None
    return {
        'children': len(changes),
        'servers_per_request': max(c['per_request'] for c in changes),
        'requests': sum(c['requests'] for c in changes),
        'change_ms_median': [c['change_ms']['median'] for c in changes
                             if c['change_ms']],
        'restored': [c['restored'] for c in changes],
    }
