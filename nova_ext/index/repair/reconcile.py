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
database lets one of them run each pass. Its holder is the indexer's
holder row (:mod:`nova_ext.index.marks.holders`): taken with one conditional
UPDATE (atomic on SQLite, MySQL and PostgreSQL alike), it is free again
once given back or once that holder is gone, which the holders'
heartbeats tell within ``holder_timeout``. The indexer that gave back the
last complete pass times the next one by its own monotonic clock; the
others take over if it is gone, or if twice the interval passed by
theirs. No host's clock is compared with another's.
"""

import json
import socket
import threading
import time

from nova import context as nova_context
from oslo_db import exception as db_exc
from oslo_log import log as logging
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from nova_ext.index import db
from nova_ext.index.marks import holders
from nova_ext.index.marks import watch
from nova_ext.index.repair import sync
from nova_ext.index.repair import verify
from nova_ext.index import schema
from nova_ext.index import sqlite
from nova_ext.service import periodic

LOG = logging.getLogger(__name__)

LEASES = schema.RECONCILE_LEASES

HOLDERS = schema.HOLDERS

NAME = 'reconcile'


def _alive(column):
    return sa.exists().where(HOLDERS.c.holder == column)


def acquire(engine, holder, generation):
    """Take the lease if it is still at ``generation`` and nobody holds it.

    Nobody: no holder, or one whose holder row is gone (it died, or exited,
    during its pass).
    """
    with db.begin_write(engine) as conn:
        taken = conn.execute(sa.update(LEASES).where(
            LEASES.c.name == NAME, LEASES.c.generation == generation,
            sa.or_(LEASES.c.holder.is_(None),
                   ~_alive(LEASES.c.holder))).values(
            holder=holder)).rowcount
    if taken:
        return True
    for attempt in range(3):
        try:
            with db.begin_write(engine) as conn:
                if conn.execute(sa.select(LEASES.c.name).where(
                        LEASES.c.name == NAME)).first() is not None:
                    return False
                conn.execute(sa.insert(LEASES).values(
                    name=NAME, holder=holder, generation=0))
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


def holds(engine, holder):
    """Whether ``holder`` holds the lease."""
    with engine.connect() as conn:
        return conn.execute(sa.select(LEASES.c.name).where(
            LEASES.c.name == NAME,
            LEASES.c.holder == holder)).first() is not None


def release(engine, holder, done=None):
    """Give the lease back; False if it was not ``holder``'s any more.

    :param done: the complete :class:`Pass`, recorded as the last one,
        whose holder times the next; None: the pass is due again at once
        (an interrupted pass is taken over now).
    """
    values = {'holder': None, 'generation': LEASES.c.generation + 1,
              'timer': holder if done is not None else None}
    if done is not None:
        values.update(last_holder=done.holder,
                      last_started_at=done.started_at,
                      last_finished_at=done.finished_at,
                      last_result=json.dumps(done.as_dict(), sort_keys=True))
    with db.begin_write(engine) as conn:
        return bool(conn.execute(sa.update(LEASES).where(
            LEASES.c.name == NAME, LEASES.c.holder == holder).values(
            **values)).rowcount)


def read(engine):
    """The lease row as a dict, or None.

    ``last_result`` decoded; ``holder_at`` and ``timer_at`` are the
    ``host/pid`` of the holder and of the timer while their holder rows
    are there, else None.
    """
    held_by = HOLDERS.alias('held_by')
    timed_by = HOLDERS.alias('timed_by')
    with engine.connect() as conn:
        row = conn.execute(sa.select(
            LEASES, held_by.c.host.label('holder_host'),
            held_by.c.pid.label('holder_pid'),
            timed_by.c.host.label('timer_host'),
            timed_by.c.pid.label('timer_pid')).select_from(
            LEASES.outerjoin(held_by, held_by.c.holder == LEASES.c.holder)
            .outerjoin(timed_by, timed_by.c.holder == LEASES.c.timer)).where(
            LEASES.c.name == NAME)).first()
    if row is None:
        return None
    found = dict(row._mapping)
    found['last_result'] = json.loads(row.last_result or 'null')
    for who in ('holder', 'timer'):
        host, pid = found.pop(who + '_host'), found.pop(who + '_pid')
        found[who + '_at'] = None if host is None else '%s/%s' % (host, pid)
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
    """Runs a reconcile pass every interval, when it wins the lease.

    :param lease: the :class:`holders.Lease` whose name holds the reconcile
        lease; this process's by default.
    :param clock: a monotonic clock, this process's own.
    """

    def __init__(self, conf, lease=None, clock=time.monotonic,
                 name='nova-ext-index-reconcile'):
        self.conf = conf
        self.lease = lease or holders.get_lease(conf)
        self.clock = clock
        self.passes = 0
        self._name = name
        self._stop = threading.Event()
        self._lost = threading.Event()
        self._thread = None
        # (generation, this clock's time it was first seen at)
        self._seen = (None, None)

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
        LOG.info('nova_ext index reconcile every %d s', self.interval)

    def stop(self, timeout=10):
        """Stop, between two cells; False if one still runs after timeout.

        The pass left running dies with the process; its lease is free
        once the process's holder row is gone.
        """
        self._stop.set()
        if self._thread is None:
            return True
        self._thread.join(timeout)
        if self._thread.is_alive():
            LOG.info('nova_ext index reconcile still in a cell; the lease '
                     'goes with this process')
            return False
        return True

    def _run(self):
        # A loop of its own rather than a periodic: when to look again
        # comes from the lease row (the next pass due, another holder's
        # pass), not from a fixed spacing, and oslo.service's
        # DynamicLoopingCall would run on eventlet in a process that
        # imported Nova without choosing a backend (nova_ext.service.
        # periodic says why).
        while not self._stop.is_set():
            try:
                self.run_once()
                wait = self._wait
            except Exception:
                # Whatever broke (the index or the API database away), the
                # indexer keeps listening; the pass is tried again later.
                LOG.exception('nova_ext index reconcile failed; next try '
                              'in %d s', self.interval)
                wait = self.interval
            self._stop.wait(wait)

    @property
    def _wait(self):
        # A dead holder is told within holder_timeout; looking again every
        # half of it takes its pass over soon after.
        return min(self.interval, max(
            1.0, self.conf.nova_ext_index.holder_timeout / 2.0))

    def due(self, row, name):
        """Whether a pass is due, as this process sees ``row``."""
        if row is None:
            return True
        if row['holder'] is not None:
            # Running, or interrupted by its holder's death.
            return row['holder_at'] is None
        now = self.clock()
        if self._seen[0] != row['generation']:
            self._seen = (row['generation'], now)
        waited = now - self._seen[1]
        if row['timer'] is None or row['timer_at'] is None:
            return True     # interrupted, or its timer is gone
        if row['timer'] == name:
            return waited >= self.interval
        # Another indexer times it; should its loop have stopped while the
        # process lives, this one goes on after twice the interval.
        return waited >= 2 * self.interval

    def run_once(self, ctx=None):
        """One pass if it is due and this process wins the lease.

        Its :class:`Pass`, else None.
        """
        engine = self.engine
        watch.get_watch(self.conf).settle(engine)
        name = self.lease.ensure(engine)
        row = read(engine)
        generation = row['generation'] if row else 0
        if not self.due(row, name) or not acquire(engine, name, generation):
            return None
        self._lost.clear()
        # Wall-clock times, for operators to read; nothing compares them.
        done = Pass('%s/%d' % (socket.gethostname(), self.lease.pid),
                    time.time())
        heart = periodic.Periodic(
            lambda: self._check(name),
            self.conf.nova_ext_index.holder_heartbeat_interval,
            self._name + '-lease', run_immediately=False)
        heart.start()
        complete = False
        started = self.clock()
        try:
            self._reconcile(ctx or nova_context.get_admin_context(), done)
            complete = not done.interrupted
        finally:
            heart.stop()
            done.finished_at = time.time()
            if not release(engine, name, done if complete else None):
                LOG.warning('nova_ext index reconcile: %s lost its lease '
                            'during the pass', done.holder)
            # The next pass is an interval from now by this clock, which
            # also times it for the row just given back.
            self._seen = (generation + 1, self.clock())
        self.passes += 1
        LOG.info('nova_ext index reconcile pass by %s in %.1f s: drift %d, '
                 'fixed %d; %s', done.holder, self.clock() - started,
                 done.drift, done.fixed, done)
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

    def _check(self, name):
        try:
            held = self.lease.current(name) and holds(self.engine, name)
        except Exception as e:
            # The holder's heartbeat, not this check, keeps the lease.
            LOG.warning('nova_ext index reconcile could not check its '
                        'lease: %s', e)
            return
        if not held:
            LOG.warning('nova_ext index reconcile: this process was taken '
                        'for dead and its lease taken over; stopping after '
                        'this cell')
            self._lost.set()
            raise periodic.NeverAgain()
