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
"""What the tests of the index share: a real SQLite index database."""

import collections
import datetime
import os
import sqlite3

import fixtures
from oslo_db import exception as db_exc
import sqlalchemy as sa

from nova_ext.index.apply import refresh
from nova_ext.index.apply import source
from nova_ext.index import db
from nova_ext.index.marks import batcher
from nova_ext.index.marks import pending
from nova_ext.index.marks import sequence
from nova_ext.index import schema
from nova_ext.index.upkeep import migration
from nova_ext.tests.unit import base


def ticket(engine):
    """The index's current sequence number, on a connection of its own."""
    with engine.connect() as conn:
        return sequence.current(conn)


class IndexDBTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        self.flags(connection='sqlite:///%s' % os.path.join(tmp, 'i.sqlite'),
                   group='nova_ext_index')
        db.reset()
        self.addCleanup(db.reset)
        migration.db_sync(self.conf.conf)
        self.engine = db.get_engine(self.conf.conf)

    def lasts(self):
        """``{uuid: last_event_at}`` of every mark."""
        return {uuid: last for uuid, (_first, last) in
                held(self.engine).items()}


def lock(test, path):
    """Hold the write lock of the SQLite database file ``path``.

    Another connection, as another process would hold it; released by
    the returned connection's ``execute('ROLLBACK')``, or at cleanup.
    """
    conn = sqlite3.connect(path, isolation_level=None)
    test.addCleanup(conn.close)
    conn.execute('BEGIN EXCLUSIVE')
    return conn


def held(engine):
    """``{uuid: (first, last)}`` of every mark."""
    c = schema.PENDING.c
    with engine.connect() as conn:
        return {r[0]: tuple(r[1:]) for r in conn.execute(sa.select(
            c.uuid, c.first_event_at, c.last_event_at))}


def holds(engine):
    """``[(uuid, holder, token)]`` of every hold, in order."""
    c = schema.HOLDS.c
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(sa.select(
            c.uuid, c.holder, c.token).order_by(c.uuid, c.holder, c.token))]


def race_on_insert(test, engine, table, other_writer):
    """Run ``other_writer`` once, just before ``engine`` inserts in ``table``.

    At that point the transaction may have read, but has not yet written,
    so the other writer does not wait for it: it commits, and the insert
    then finds the transaction's reads out of date.
    """
    raced = []

    def race(conn, cursor, statement, parameters, context, executemany):
        if not raced and statement.startswith('INSERT INTO %s ' % table):
            raced.append(statement)
            other_writer()
    sa.event.listen(engine, 'before_cursor_execute', race)
    test.addCleanup(sa.event.remove, engine, 'before_cursor_execute', race)


class FailingCellTestCase(IndexDBTestCase):
    """The marks of ``down-*`` fail (their cell is down), the others apply."""

    def setUp(self):
        super().setUp()
        self.tried = collections.Counter()
        self.useFixture(fixtures.MockPatchObject(
            refresh, 'refresh', side_effect=self._refresh))

    def _refresh(self, ctx, conf, uuids, answered=None):
        self.tried.update(list(uuids))
        return refresh._empty(), sorted(u for u in uuids
                                        if u.startswith('down'))


class BatcherTestCase(IndexDBTestCase):

    def setUp(self):
        super().setUp()
        # Batches are recorded by calls to pending.mark, kept up.
        self.batches = []
        real = self.real_mark = pending.mark

        def recording(engine, changes, holds=(), releases=(), timeout=None,
                      told=()):
            self.batches.append(dict(changes))
            return real(engine, changes, holds, releases, timeout=timeout,
                        told=told)
        self.useFixture(fixtures.MockPatchObject(pending, 'mark',
                                                 side_effect=recording))
        self.useFixture(fixtures.MockPatchObject(batcher, 'BACKOFF', 0.01))

    def fail_first(self, times):
        """Have the first ``times`` batches fail; the batches asked, kept."""
        real, calls = self.real_mark, []

        def failing(engine, changes, holds=(), releases=(), timeout=None,
                    told=()):
            calls.append(dict(changes))
            if len(calls) <= times:
                raise db_exc.DBError('index away')
            return real(engine, changes, holds, releases, timeout=timeout,
                        told=told)
        pending.mark.side_effect = failing
        return calls

    def batcher(self, size=100, delay=10.0, release_delay=None):
        running = batcher.Batcher(self.conf.conf, size=size, delay=delay,
                                  release_delay=release_delay)
        self.addCleanup(running.stop)
        return running

    def marked(self):
        with self.engine.connect() as conn:
            return {r.uuid: (r.first_event_at, r.last_event_at)
                    for r in conn.execute(sa.select(schema.PENDING))}


def message(uuid, event_type='instance.update', message_id=None):
    """A notification as nova-ext-indexer's listener gets it."""
    return {'ctxt': {}, 'publisher_id': 'nova-compute:h1',
            'event_type': event_type,
            'payload': {'nova_object.data': {'uuid': uuid}},
            'metadata': {'timestamp': '2026-11-22 10:00:00.000000',
                         'message_id': message_id}}


def told(engine):
    """``{message_id: seq}`` of the notifications recorded as marked."""
    with engine.connect() as conn:
        return {r.message_id: r.seq for r in conn.execute(
            sa.select(schema.TOLD))}


class Cell(object):
    """What the writer reads of a cell mapping."""

    def __init__(self, uuid, id):
        self.uuid, self.id = uuid, id


T0 = datetime.datetime(2026, 11, 22, 12, 0, 0)


def instance_row(uuid, source_id, updated_at, name, hidden=False,
                 deleted=False):
    """An ``instances`` row as a cell read gives it."""
    return {'id': source_id, 'uuid': uuid, 'updated_at': updated_at,
            'created_at': T0, 'deleted_at': T0 if deleted else None,
            'deleted': source_id if deleted else 0, 'hidden': hidden,
            'display_name': name}


def cell_read(cell, read_at, *rows, tags=None, ticket=None):
    """A ``source.CellRead`` of ``cell`` holding ``rows``.

    Its ticket orders it among reads: ``read_at`` unless given.
    """
    read = source.CellRead(cell, read_at,
                           read_at if ticket is None else ticket)
    for row in rows:
        read.instances[row['uuid']] = row
    read.children['tags'] = tags or {}
    return read
