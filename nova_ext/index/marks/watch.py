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
"""Which holders died: their beats stood still for ``holder_timeout``.

Whoever re-reads marks watches the holders' counts (``holders``): a count
that has not moved for ``holder_timeout`` by the watcher's own monotonic
clock, while the watcher could read it, is a dead holder's, whose row the
watcher deletes, renewing the marks it held, so that they are re-read by
a read that begins after the holder died. No host's clock is compared
with another's.
"""

import threading
import time

from oslo_log import log as logging
import sqlalchemy as sa

from nova_ext.index.marks import holders

LOG = logging.getLogger(__name__)

HOLDERS = holders.HOLDERS

_LOCK = threading.Lock()
_WATCH = None


def get_watch(conf):
    """This process's :class:`Watch`, made on first use."""
    global _WATCH
    with _LOCK:
        if _WATCH is None:
            _WATCH = Watch(conf)
        return _WATCH


def reset():
    global _WATCH
    with _LOCK:
        _WATCH = None


class Watch(object):
    """Tells dead holders by their beats, by this process's clock."""

    def __init__(self, conf):
        self.conf = conf
        self._lock = threading.Lock()
        # {holder: (beats, monotonic time they were first seen)}
        self._seen = {}
        self._due = 0.0
        # When the table was last read, or None after a failed read.
        self._read_at = None

    def dead(self, engine, now=None, rows=None):
        """The holders whose beats stood still for ``holder_timeout``.

        ``[(holder, host, pid, beats)]``; the holders table is read at
        most once per ``holder_heartbeat_interval``, unless the caller
        read it (``rows``: ``(holder, host, pid, beats, ...)``, read at
        ``now``). Stood still while
        this process watched: a read that failed, or one more than half
        ``holder_timeout`` after the last, starts the count again. After
        an outage of the index, every holder's count stood still; those
        that live beat once they have recorded what they kept meanwhile.
        """
        options = self.conf.nova_ext_index
        now = time.monotonic() if now is None else now
        if rows is None:
            with self._lock:
                if now < self._due:
                    return []
                self._due = now + options.holder_heartbeat_interval
            try:
                with engine.connect() as conn:
                    rows = conn.execute(sa.select(
                        HOLDERS.c.holder, HOLDERS.c.host, HOLDERS.c.pid,
                        HOLDERS.c.beats)).all()
            except Exception:
                self.unread()
                raise
        dead = []
        with self._lock:
            if self._read_at is None or (
                    now - self._read_at > options.holder_timeout / 2):
                self._seen = {}
            self._read_at = now
            seen = {}
            for row in rows:
                beats, since = self._seen.get(row.holder, (None, now))
                if beats != row.beats:
                    since = now
                elif now - since >= options.holder_timeout:
                    dead.append(tuple(row)[:4])
                seen[row.holder] = (row.beats, since)
            self._seen = seen
        return dead

    def unread(self):
        """A read of the holders table failed: the counts start again."""
        with self._lock:
            self._read_at = None

    def settle(self, engine, now=None, rows=None):
        """Release the holds of dead holders; the instances they held.

        :param rows: as :meth:`dead` takes them.
        """
        released = set()
        for holder, host, pid, beats in self.dead(engine, now, rows):
            uuids = holders.release(engine, holder, beats)
            if uuids is None:
                continue
            # A process that exits without running its atexit hooks holds
            # nothing most of the time: only lost holds are worth a warning.
            LOG.log(logging.WARNING if uuids else logging.INFO,
                    'nova_ext index: holder %s (%s, pid %s) stopped beating '
                    'for %.0f s; released its holds of %d instances, to be '
                    're-read', holder, host, pid,
                    self.conf.nova_ext_index.holder_timeout, len(uuids))
            released.update(uuids)
        return released
