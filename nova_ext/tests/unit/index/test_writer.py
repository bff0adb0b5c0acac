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
"""Writing cell reads into a real SQLite index database."""

import datetime

from nova.db.main import models as nova_models
import sqlalchemy as sa

from nova_ext.index import ids
from nova_ext.index import source
from nova_ext.index import writer
from nova_ext.tests.unit.index import base as index_base


class TestWriter(index_base.IndexDBTestCase):

    CELL1 = index_base.Cell('cell-1', 3)
    CELL2 = index_base.Cell('cell-2', 4)

    def held(self):
        with self.engine.connect() as conn:
            return {r.uuid: (r.id, r.display_name, r.deleted) for r in
                    conn.execute(sa.select(source.INSTANCES))}

    def test_write_then_newer_then_older(self):
        u = 'u-1'
        t0 = index_base.T0
        t1 = t0 + datetime.timedelta(seconds=1)
        out = writer.apply(self.engine, index_base.cell_read(
            self.CELL1, 100.0, index_base.instance_row(u, 7, t1, 'new')), [u])
        self.assertEqual([u], out.written)
        self.assertEqual({u: (ids.index_id(7, 3), 'new', 0)}, self.held())
        # An older state read later (clock skew) does not win...
        out = writer.apply(self.engine, index_base.cell_read(
            self.CELL1, 200.0, index_base.instance_row(u, 7, t0, 'old')), [u])
        self.assertEqual([u], out.stale)
        # ...nor the same state read earlier (a slow duplicate).
        out = writer.apply(self.engine, index_base.cell_read(
            self.CELL1, 50.0, index_base.instance_row(u, 7, t1, 'dup')), [u])
        self.assertEqual([u], out.stale)
        self.assertEqual('new', self.held()[u][1])
        # A repeat of the same read is applied again (idempotent).
        out = writer.apply(self.engine, index_base.cell_read(
            self.CELL1, 100.0, index_base.instance_row(u, 7, t1, 'new')), [u])
        self.assertEqual([u], out.written)

    def test_deleted_row_keeps_nova_marker(self):
        u = 'u-2'
        writer.apply(self.engine, index_base.cell_read(
            self.CELL1, 1.0, index_base.instance_row(
                u, 9, index_base.T0, 'gone', deleted=True)), [u])
        index_id, _name, deleted = self.held()[u]
        self.assertEqual(index_id, deleted)

    def test_related_rows_replaced(self):
        u, t0 = 'u-3', index_base.T0
        writer.apply(self.engine, index_base.cell_read(
            self.CELL1, 1.0, index_base.instance_row(u, 1, t0, 'a'),
            tags={u: [{'resource_id': u, 'tag': 'x'}]}), [u])
        writer.apply(self.engine, index_base.cell_read(
            self.CELL1, 2.0, index_base.instance_row(u, 1, t0, 'a'),
            tags={u: [{'resource_id': u, 'tag': 'y'}]}), [u])
        with self.engine.connect() as conn:
            tags = [r.tag for r in conn.execute(sa.select(
                nova_models.Tag.__table__))]
        self.assertEqual(['y'], tags)

    def test_hidden_copy_never_hides_the_visible_one(self):
        u = 'u-4'
        writer.apply(self.engine, index_base.cell_read(
            self.CELL2, 1.0,
            index_base.instance_row(u, 5, index_base.T0, 'moved')), [u])
        out = writer.apply(self.engine, index_base.cell_read(
            self.CELL1, 2.0, index_base.instance_row(
                u, 8, index_base.T0, 'left behind', hidden=True)), [u])
        self.assertEqual([u], out.hidden)
        self.assertEqual('moved', self.held()[u][1])

    def test_gone_from_its_cell_leaves_the_index(self):
        u = 'u-5'
        writer.apply(self.engine, index_base.cell_read(
            self.CELL1, 1.0,
            index_base.instance_row(u, 2, index_base.T0, 'x')), [u])
        out = writer.apply(self.engine,
                           index_base.cell_read(self.CELL2, 2.0), [u])
        self.assertEqual([u], out.missing)
        out = writer.apply(self.engine,
                           index_base.cell_read(self.CELL1, 2.0), [u])
        self.assertEqual([u], out.removed)
        self.assertEqual({}, self.held())

    def book(self, uuid):
        with self.engine.connect() as conn:
            return conn.execute(sa.select(writer.BOOK).where(
                writer.BOOK.c.uuid == uuid)).one()

    def test_the_same_rows_read_again_only_record_when(self):
        u, t0 = 'u-6', index_base.T0
        writer.apply(self.engine, index_base.cell_read(
            self.CELL1, 1.0, index_base.instance_row(u, 1, t0, 'a'),
            tags={u: [{'resource_id': u, 'tag': 'x'}]}), [u])
        first = self.book(u)
        self.assertIsNotNone(first.digest)
        statements = []

        def record(conn, cursor, statement, *args):
            statements.append(statement.split()[0])
        sa.event.listen(self.engine, 'before_cursor_execute', record)
        out = writer.apply(self.engine, index_base.cell_read(
            self.CELL1, 2.0, index_base.instance_row(u, 1, t0, 'a'),
            tags={u: [{'resource_id': u, 'tag': 'x'}]}), [u])
        sa.event.remove(self.engine, 'before_cursor_execute', record)
        self.assertEqual([u], out.written)
        again = self.book(u)
        # When it was read is recorded; when it was written (the render
        # cache's key) stays.
        self.assertEqual((first.digest, 1.0, 2.0),
                         (again.digest, again.read_at, again.checked_at))
        # The book read and updated; no row deleted or inserted.
        self.assertEqual(['SELECT', 'UPDATE'],
                         [s for s in statements if s != 'BEGIN'])
        # A slow read from before that check is older than it: dropped.
        out = writer.apply(self.engine, index_base.cell_read(
            self.CELL1, 1.5, index_base.instance_row(u, 1, t0, 'a'),
            tags={u: [{'resource_id': u, 'tag': 'old'}]}), [u])
        self.assertEqual([u], out.stale)
        # A related row changed (the instance row did not): written anew.
        writer.apply(self.engine, index_base.cell_read(
            self.CELL1, 3.0, index_base.instance_row(u, 1, t0, 'a'),
            tags={u: [{'resource_id': u, 'tag': 'y'}]}), [u])
        self.assertNotEqual(first.digest, self.book(u).digest)
        with self.engine.connect() as conn:
            self.assertEqual(['y'], [r.tag for r in conn.execute(sa.select(
                nova_models.Tag.__table__))])

    def test_the_digest_is_the_cells(self):
        u, t0 = 'u-7', index_base.T0
        one = index_base.cell_read(
            self.CELL1, 1.0, index_base.instance_row(u, 1, t0, 'a'))
        two = index_base.cell_read(
            self.CELL2, 1.0, index_base.instance_row(u, 1, t0, 'a'))
        self.assertNotEqual(writer.digest(one, u), writer.digest(two, u))
