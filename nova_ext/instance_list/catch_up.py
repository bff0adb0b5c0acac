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
"""Before the index answers a list: every recorded change applied.

Capture (``nova_ext.index.marks.capture``) and the notification consumers
mark changed instances in the index's pending table; the index worker
applies the marks in the background. A list request does not wait for it:
it applies what is still marked itself, re-reading those instances from
their cells as the worker would, and only then reads the index. What it
cannot apply at once, it hands to Nova's path.
"""

import time

from nova_ext import direct_reads
from nova_ext.index.apply import refresh
from nova_ext.index.apply import turn
from nova_ext.index import db
from nova_ext.index import generation
from nova_ext.index.marks import holders
from nova_ext.index.marks import pending
from nova_ext.index.marks import process
from nova_ext.index.marks import watch
from nova_ext.index.marks import witness
from nova_ext.index.upkeep import rules
from nova_ext.instance_list import base

#: Where the memo of kept rows keeps the deleted servers they show.
_DELETED = 'catch_up.deleted'


def unrecorded():
    """``(count, seconds)`` of the changes this process could not record.

    The changes it captured and could not record in the index yet, and the
    age of the oldest by this process's own clock. No other process knows
    of them: this one hands its lists to Nova until they are recorded
    (``nova_ext.index.upkeep.rules``). Those recorded in the pending table
    do not count, however old: each list request applies them first
    (:class:`CatchUp`), or hands itself to Nova.
    """
    held = process.held()
    if not held:
        return 0, 0.0
    oldest = min(first for first, _ in held.values())
    return len(held), max(0.0, time.time() - oldest)


def silent(conf):
    """The other holders of marks that have not vouched lately.

    By this process's own reads (``nova_ext.index.marks.witness``): a
    sorted list of names, or None if it has not read them lately.
    """
    own = holders.get_lease(conf).name
    return witness.get_witness(conf).silent(own=own)


class CellCheck(object):
    """A list request's check that every cell answers, made once.

    Nova's list learns that a cell is down from the request's own query of
    each cell, and so does the index (``cellhealth``). A request that
    re-reads changed instances from their cells makes its check in the
    same pass (``refresh.refresh``'s ``answered``): the cells it reads
    answer by their reads, the others are asked the trivial query, and
    each cell is queried once. A cell that fails that pass, or any failure
    before it, has the request make the check of ``cellhealth`` on its
    own, whose answer (and log of the cells it finds down) is then the
    request's; so does a request while the last such check found cells
    down, so that it logs their return.
    """

    def __init__(self, catch_up, health, ctx):
        self._catch_up = catch_up
        self._health = health
        self._ctx = ctx
        self.done = False

    def merges(self):
        """Whether a pass over the cells may be the check.

        Not where the request began its check early
        (``cellhealth.CellHealth.begin``): that one is the check.
        """
        return (not self.done and not self._catch_up.cells_down and
                not self._health.begun(self._ctx))

    def take(self, answered):
        """Have a pass over the cells be the check, if every cell answered.

        :param answered: ``{cell uuid: whether it answered}``, as
            ``refresh.refresh`` fills it; empty if it made no pass.
        """
        if answered and all(answered.values()):
            self.done = True
            return
        self.make()

    def make(self):
        """The check on its own, unless made: raise Unservable if down."""
        if self.done:
            return
        self.done = True
        down = self._health.down_cells(self._ctx, self._catch_up.conf)
        self._catch_up.cells_down = bool(down)
        if down:
            raise base.Unservable('cells %s are down; Nova lists them its '
                                  'own way' % ', '.join(down))


class CatchUp(object):
    """What a list request does about changes, before and after its query.

    One thread of one process at a time applies the marks (``turn``); the
    others wait for it, up to ``query_timeout``, and find nothing left, or
    only marks of instances read since they looked
    (``pending.look``).
    """

    def __init__(self, conf):
        self.conf = conf
        #: Whether the last check on its own found cells down.
        self.cells_down = False

    def check(self, ctx, health):
        """The :class:`CellCheck` of a request, with ``cellhealth``'s."""
        return CellCheck(self, health, ctx)

    def __call__(self, ctx, check=None):
        """Apply every recorded change to the index, or raise Unservable.

        A page must never show a server older than a change already
        recorded for it. With more than ``catch_up_limit`` changes
        waiting, with changes this process could not record, or with a
        cell that cannot be read, Nova answers instead.

        :param check: the request's :class:`CellCheck`, made by this call
            (with the reads of the changes where there are any): a cell
            down is the reason Nova answers, before any other.
        :returns: the index's generation, read with the finding that no
            change waited (``generation.settled``); None if changes were
            applied, or the generation is unknown: then the list reads it.
        """
        try:
            now = self._apply(ctx, check)
        except Exception:
            if check is not None:
                check.make()
            raise
        if check is not None:
            check.make()
        return now

    def _apply(self, ctx, check):
        self._record_own()
        self._others_recorded()
        engine = db.get_engine(self.conf)
        limit = self.conf.nova_ext_index.catch_up_limit
        # As the list's other one-statement reads (direct_reads).
        waiting, now, ticket = generation.settled(engine, direct_reads.first)
        if not waiting:
            return now
        # The holds of a process that died stop counting here too, not
        # only where an indexer runs.
        watch.get_watch(self.conf).settle(engine)
        if check is not None and not check.merges():
            # Cells were found down by this process's last check: the check
            # first, in query_timeout, where the reads of the changes would
            # wait Nova's longer timeout for a cell that hangs, and before
            # waiting for another's turn that may be reading it.
            check.make()
        with turn.held(engine,
                       self.conf.nova_ext_index.query_timeout) as held:
            # Another thread or process may have applied them meanwhile.
            # And those another read since this request looked (its turn,
            # that this one waited for): their reads saw every change this
            # request must show. A held mark stays after its read, and
            # would be read again by every request.
            with held.reading() as conn:
                taken, fresh = pending.look(conn, limit + 1, ticket)
            if not taken:
                return None
            too_many = rules.pending(len(taken), limit, at_least=True)
            if too_many:
                raise base.Unservable(too_many)
            taken = {u: seq for u, seq in taken.items() if u not in fresh}
            if not taken:
                return None
            if check is not None and not check.merges():
                # Found down by another request while this one waited.
                check.make()
            answered = {} if check is not None and check.merges() else None
            failed = refresh.apply_marks(ctx, self.conf, taken,
                                         answered=answered)
        if answered is not None:
            # Down cells, if any, before the instances that failed.
            check.take(answered)
        if failed:
            raise base.Unservable('%d changed instances could not be read '
                                  'and recorded' % len(failed))
        return None

    def _record_own(self):
        """Have this process's captured changes recorded, or raise.

        A write of this process whose mark could not be written with it
        (the index's lock was busy for ``capture_timeout``) waits in its
        batcher for the next batch. The request has that batch committed
        now, within ``query_timeout``, rather than hand itself to Nova,
        whose path takes longer still; its catch-up then applies them.
        """
        count, _ = unrecorded()
        if count:
            process.get_batcher(self.conf).flush(
                self.conf.nova_ext_index.query_timeout)
            count, _ = unrecorded()
        if count:
            raise base.Unservable(rules.unrecorded(count))

    def _others_recorded(self):
        """Raise Unservable unless every holder vouched lately.

        A change another process could not record is known to that
        process alone; it vouches again only once the change is recorded,
        and the write that made it waits until this process can no
        longer take the holder's last vouch for recent (``witness``).
        """
        reason = rules.silent(silent(self.conf), holders.window(self.conf))
        if reason:
            raise base.Unservable(reason)

    def check_archived(self, ctx, records):
        """Hand to Nova a page showing servers Nova has archived.

        Archiving (``nova-manage db archive_deleted_rows``) moves deleted
        rows out of the cells, on a connection of its own that capture
        does not see, and then deletes their instance mappings; with
        capture on in that process, the mappings' deletion is recorded
        and applied like any change. Where it was not, or the archive
        failed between the two (the mappings stay), the page's tombstones
        are looked up in their cells: those gone are removed from the
        index, and this request is Nova's.
        """
        # Worked out once for rows the driver keeps (``base.Page.memo``),
        # not by each request that shows them.
        deleted = base.worked_out(
            getattr(records, 'memo', None), _DELETED,
            lambda: [r['uuid'] for r in records if r['deleted']])
        if not deleted:
            return
        mapped, unsure = refresh.locate(ctx, deleted)
        present = refresh.in_cells(ctx, mapped)
        if present is None or unsure:
            raise base.Unservable('a cell of the listed deleted servers '
                                  'could not be read')
        archived = [uuid for uuid in deleted if uuid not in present]
        if archived:
            refresh.refresh_now(ctx, self.conf, archived)
            raise base.Unservable('%d listed servers were archived'
                                  % len(archived))
