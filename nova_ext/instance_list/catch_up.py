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

Capture (``nova_ext.index.capture``) and the notification consumers mark
changed instances in the index's pending table; the index worker applies
the marks in the background. A list request does not wait for it: it
applies what is still marked itself, re-reading those instances from
their cells as the worker would, and only then reads the index. What it
cannot apply at once, it hands to Nova's path.
"""

import threading
import time

from nova_ext.index import consumer
from nova_ext.index import db
from nova_ext.index import holders
from nova_ext.index import pending
from nova_ext.index import refresh
from nova_ext.index import rules
from nova_ext.instance_list import base


def unrecorded():
    """``(count, seconds)`` of the changes this process could not record.

    The changes it captured and could not record in the index yet, and the
    age of the oldest by this process's own clock. No other process knows
    of them: this one hands its lists to Nova until they are recorded
    (``nova_ext.index.rules``). Those recorded in the pending table do not
    count, however old: each list request applies them first
    (:class:`CatchUp`), or hands itself to Nova.
    """
    held = consumer.held()
    if not held:
        return 0, 0.0
    oldest = min(first for first, _ in held.values())
    return len(held), max(0.0, time.time() - oldest)


class CatchUp(object):
    """What a list request does about changes, before and after its query.

    One per driver, so that one thread of a nova-api process at a time
    applies the marks; the others wait for it and find nothing left.
    """

    def __init__(self, conf):
        self.conf = conf
        self._lock = threading.Lock()

    def __call__(self, ctx):
        """Apply every recorded change to the index, or raise Unservable.

        A page must never show a server older than a change already
        recorded for it. With more than ``catch_up_limit`` changes
        waiting, with changes this process could not record, or with a
        cell that cannot be read, Nova answers instead.
        """
        count, _ = unrecorded()
        if count:
            raise base.Unservable(rules.unrecorded(count))
        engine = db.get_engine(self.conf)
        limit = self.conf.nova_ext_index.catch_up_limit
        if not pending.take(engine, 1):
            return
        # The holds of a process that died stop counting here too, not
        # only where an indexer runs.
        holders.get_watch(self.conf).settle(engine)
        with self._lock:
            # Another thread may have applied them meanwhile.
            taken = pending.take(engine, limit + 1)
            if not taken:
                return
            too_many = rules.pending(len(taken), limit, at_least=True)
            if too_many:
                raise base.Unservable(too_many)
            failed = refresh.apply_marks(ctx, self.conf, taken)
        if failed:
            raise base.Unservable('%d changed instances could not be read '
                                  'from their cells' % len(failed))

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
        deleted = [r['uuid'] for r in records if r['deleted']]
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
