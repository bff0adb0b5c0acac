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
"""The periodic reconcile: ``verify --fix`` and ``purge``, on a lease.

Notifications keep the index true, but not all of it: one can be dropped
before it reaches the bus, Nova changes some things without one, and
archiving deleted rows is never notified. Every
``[nova_ext_index]reconcile_interval`` seconds one indexer compares every
cell with the index, heals what differs (:func:`verify.verify_cell` with
``fix``) and purges expired tombstones.

Several indexers may run for availability; a lease row in the index
database lets one of them run each pass. It is taken with one conditional
UPDATE (atomic on SQLite, MySQL and PostgreSQL alike), renewed while the
pass runs, and simply expires if its holder dies, so another indexer takes
over. Times are the hosts' wall clocks: they are compared across hosts.
"""

import json
import os
import socket
import threading
import time

from nova import context as nova_context
from oslo_db import exception as db_exc
from oslo_log import log as logging
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from nova_ext.index import db
from nova_ext.index import sqlite
from nova_ext.index import sync
from nova_ext.index import verify
from nova_ext.service import periodic

LOG = logging.getLogger(__name__)

LEASES = sa.table(
    'nova_ext_index_reconcile',
    sa.column('name', sa.String), sa.column('holder', sa.String),
    sa.column('expires_at', sa.Float), sa.column('due_at', sa.Float),
    sa.column('last_holder', sa.String),
    sa.column('last_started_at', sa.Float),
    sa.column('last_finished_at', sa.Float),
    sa.column('last_result', sa.Text))

NAME = 'reconcile'
#: Seconds a lease lasts unless renewed. A holder renews it every third of
#: that while it works, so a dead holder is replaced within this long, and
#: clocks may be that far apart before two holders could overlap.
LEASE_TTL = 120.0


def holder_id():
    return '%s:%d' % (socket.gethostname(), os.getpid())


def acquire(engine, holder, now=None, ttl=LEASE_TTL):
    """Take the lease if a pass is due and no live holder has it."""
    now = time.time() if now is None else now
    with db.begin_write(engine) as conn:
        taken = conn.execute(sa.update(LEASES).where(
            LEASES.c.name == NAME, LEASES.c.expires_at <= now,
            LEASES.c.due_at <= now).values(
            holder=holder, expires_at=now + ttl)).rowcount
    if taken:
        return True
    for attempt in range(3):
        try:
            with db.begin_write(engine) as conn:
                if conn.execute(sa.select(LEASES.c.name).where(
                        LEASES.c.name == NAME)).first() is not None:
                    return False
                conn.execute(sa.insert(LEASES).values(
                    name=NAME, holder=holder, expires_at=now + ttl,
                    due_at=now))
            return True
        except (db_exc.DBDuplicateEntry, sa_exc.IntegrityError):
            # Another indexer created the row first, and holds it. (The
            # index's engines are oslo.db's, which raise DBDuplicateEntry;
            # a plain SQLAlchemy engine raises IntegrityError.)
            return False
        except sa_exc.OperationalError as e:
            # SQLite: another connection wrote since the read, perhaps
            # this row; read again.
            if attempt == 2 or not sqlite.stale_snapshot(e):
                raise


def renew(engine, holder, now=None, ttl=LEASE_TTL):
    """Extend a held lease; False if it is no longer ours."""
    now = time.time() if now is None else now
    with db.begin_write(engine) as conn:
        return bool(conn.execute(sa.update(LEASES).where(
            LEASES.c.name == NAME, LEASES.c.holder == holder).values(
            expires_at=now + ttl)).rowcount)


def release(engine, holder, due_at=None, done=None, now=None):
    """Give the lease back; the next pass is due at ``due_at``.

    :param due_at: None leaves it as it is (due now: an interrupted pass
        is taken over at once).
    :param done: the :class:`Pass` to record as the last one.
    """
    now = time.time() if now is None else now
    values = {'holder': None, 'expires_at': now}
    if due_at is not None:
        values['due_at'] = due_at
    if done is not None:
        values.update(last_holder=holder, last_started_at=done.started_at,
                      last_finished_at=done.finished_at,
                      last_result=json.dumps(done.as_dict(), sort_keys=True))
    with db.begin_write(engine) as conn:
        return bool(conn.execute(sa.update(LEASES).where(
            LEASES.c.name == NAME, LEASES.c.holder == holder).values(
            **values)).rowcount)


def read(engine):
    """The lease row as a dict (``last_result`` decoded), or None."""
    with engine.connect() as conn:
        row = conn.execute(sa.select(LEASES).where(
            LEASES.c.name == NAME)).first()
    if row is None:
        return None
    found = dict(row._mapping)
    found['last_result'] = json.loads(row.last_result or 'null')
    return found


class Pass(object):
    """What one reconcile pass found and did."""

    def __init__(self, holder, started_at):
        self.holder = holder
        self.started_at = started_at
        self.finished_at = None
        self.cells = []
        self.failed = []
        self.purged = None
        self.interrupted = False

    def add(self, report):
        counts = report.counts
        self.cells.append({
            'cell': report.cell_name or report.cell_uuid,
            'checked': counts['checked'], 'drift': report.drift,
            'missing': counts['missing'], 'stale': counts['stale'],
            'extra': counts['extra'], 'fixed': counts['fixed']})

    @property
    def drift(self):
        return sum(c['drift'] for c in self.cells)

    @property
    def fixed(self):
        return sum(c['fixed'] for c in self.cells)

    def as_dict(self):
        return {'holder': self.holder, 'started_at': self.started_at,
                'finished_at': self.finished_at, 'cells': self.cells,
                'failed': self.failed, 'purged': self.purged,
                'drift': self.drift, 'fixed': self.fixed,
                'interrupted': self.interrupted}

    def __str__(self):
        # Lazy: the log line formats it only if INFO is on.
        parts = ['%s drift %d fixed %d of %d' % (
            c['cell'], c['drift'], c['fixed'], c['checked'])
            for c in self.cells]
        parts += ['%s FAILED' % name for name in self.failed]
        if self.interrupted:
            parts.append('interrupted')
        elif self.purged is None:
            parts.append('purge FAILED')
        else:
            parts.append('%d tombstones purged' % self.purged)
        return ', '.join(parts)


class Reconciler(object):
    """Runs a reconcile pass every interval, when it wins the lease."""

    def __init__(self, conf, holder=None, ttl=LEASE_TTL, clock=time.time,
                 name='nova-ext-index-reconcile'):
        self.conf = conf
        self.holder = holder or holder_id()
        self.ttl = ttl
        self.clock = clock
        self.passes = 0
        self._name = name
        self._stop = threading.Event()
        self._lost = threading.Event()
        self._thread = None

    @property
    def interval(self):
        return self.conf.nova_ext_index.reconcile_interval

    @property
    def engine(self):
        return db.get_engine(self.conf)

    def start(self):
        self._thread = threading.Thread(target=self._run, name=self._name,
                                        daemon=True)
        self._thread.start()
        LOG.info('nova_ext index reconcile every %d s (as %s)',
                 self.interval, self.holder)

    def stop(self, timeout=10):
        """Stop, between two cells; False if one still runs after timeout.

        The pass left running dies with the process, and its lease expires.
        """
        self._stop.set()
        if self._thread is None:
            return True
        self._thread.join(timeout)
        if self._thread.is_alive():
            LOG.info('nova_ext index reconcile still in a cell; %s leaves '
                     'its lease to expire', self.holder)
            return False
        return True

    def _run(self):
        # A loop of its own rather than a periodic: when to look again
        # comes from the lease row (the next pass due, another holder's
        # lease expiring), not from a fixed spacing, and oslo.service's
        # DynamicLoopingCall would run on eventlet in a process that
        # imported Nova without choosing a backend (nova_ext.service.
        # periodic says why).
        while not self._stop.is_set():
            try:
                self.run_once()
                wait = self._until_due()
            except Exception:
                # Whatever broke (the index or the API database away), the
                # indexer keeps listening; the pass is tried again later.
                LOG.exception('nova_ext index reconcile failed; next try '
                              'in %d s', self.interval)
                wait = self.interval
            self._stop.wait(wait)

    def _until_due(self):
        row = read(self.engine)
        if row is None:
            return self.interval
        due = row['due_at']
        if row['holder'] is not None:
            # Someone works, or died working: look again when its lease
            # would expire.
            due = max(due, row['expires_at'])
        return min(max(due - self.clock(), 1.0), self.interval)

    def run_once(self, ctx=None):
        """One pass if this process wins the lease: its Pass, else None."""
        engine = self.engine
        started = self.clock()
        if not acquire(engine, self.holder, started, self.ttl):
            return None
        self._lost.clear()
        done = Pass(self.holder, started)
        heart = periodic.Periodic(self._renew, self.ttl / 3.0,
                                  self._name + '-lease',
                                  run_immediately=False)
        heart.start()
        complete = False
        try:
            self._reconcile(ctx or nova_context.get_admin_context(), done)
            complete = not done.interrupted
        finally:
            heart.stop()
            done.finished_at = self.clock()
            # An unfinished pass leaves the next one due at once, so that
            # another indexer takes over now rather than an interval later.
            if not release(engine, self.holder,
                           done.finished_at + self.interval
                           if complete else None,
                           done if complete else None, done.finished_at):
                LOG.warning('nova_ext index reconcile: %s lost its lease '
                            'during the pass', self.holder)
        self.passes += 1
        LOG.info('nova_ext index reconcile pass by %s in %.1f s: drift %d, '
                 'fixed %d; %s', self.holder,
                 done.finished_at - done.started_at, done.drift, done.fixed,
                 done)
        return done

    def _reconcile(self, ctx, done):
        # Every cell, cell0 too: instances that failed to build are listed
        # from the index like any other.
        for cell in sync.cells(ctx):
            if self._stop.is_set() or self._lost.is_set():
                done.interrupted = True
                return
            try:
                done.add(verify.verify_cell(ctx, self.conf, cell, fix=True))
            except Exception:
                # A cell down must not stop the others being healed.
                LOG.exception('nova_ext index reconcile of cell %s failed; '
                              'the next pass tries again',
                              cell.name or cell.uuid)
                done.failed.append(cell.name or cell.uuid)
        try:
            done.purged = verify.purge_tombstones(self.conf)
        except Exception:
            LOG.exception('nova_ext index reconcile could not purge '
                          'tombstones; the next pass tries again')

    def _renew(self):
        try:
            held = renew(self.engine, self.holder, self.clock(), self.ttl)
        except Exception as e:
            # The lease lasts a while yet; the next beat may get through.
            LOG.warning('nova_ext index reconcile could not renew its '
                        'lease: %s', e)
            return
        if not held:
            LOG.warning('nova_ext index reconcile: the lease of %s expired '
                        'and was taken over; stopping after this cell',
                        self.holder)
            self._lost.set()
            raise periodic.NeverAgain()
