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

from nova_ext.index.apply import source
from nova_ext.index.apply import writer
from nova_ext.index import ids
from nova_ext.index import schema
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
        # A read that began earlier, written later (a slow duplicate),
        # does not win...
        out = writer.apply(self.engine, index_base.cell_read(
            self.CELL1, 50.0, index_base.instance_row(u, 7, t1, 'dup')), [u])
        self.assertEqual([u], out.stale)
        self.assertEqual('new', self.held()[u][1])
        # ...a read that began later does, whatever updated_at says: the
        # change was made by a host whose clock is behind the last one's.
        out = writer.apply(self.engine, index_base.cell_read(
            self.CELL1, 200.0, index_base.instance_row(u, 7, t0, 'behind')),
            [u])
        self.assertEqual([u], out.written)
        self.assertEqual('behind', self.held()[u][1])
        self.assertEqual(200.0, self.book(u).ticket)
        # A repeat of the same read is applied again (idempotent).
        out = writer.apply(self.engine, index_base.cell_read(
            self.CELL1, 200.0, index_base.instance_row(u, 7, t0, 'behind')),
            [u])
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

    def test_a_refused_instance_is_neither_written_nor_gone(self):
        u = 'u-6'
        writer.apply(self.engine, index_base.cell_read(
            self.CELL1, 1.0,
            index_base.instance_row(u, 2, index_base.T0, 'x')), [u])
        before = self.held()
        read = index_base.cell_read(self.CELL1, 2.0)
        read.refused[u] = "locked_by 'x' is not one of ['admin', 'owner']"
        out = writer.apply(self.engine, read, [u])
        self.assertEqual(([u], [], [], []),
                         (out.refused, out.removed, out.missing, out.written))
        self.assertEqual(before, self.held())

    def book(self, uuid):
        with self.engine.connect() as conn:
            return conn.execute(sa.select(schema.INSTANCES).where(
                schema.INSTANCES.c.uuid == uuid)).one()

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

    def test_the_same_rows_from_another_cell_are_written(self):
        # Their digests are equal; the index id is the cell's.
        u, t0 = 'u-7', index_base.T0
        one = index_base.cell_read(
            self.CELL1, 1.0, index_base.instance_row(u, 1, t0, 'a'))
        two = index_base.cell_read(
            self.CELL2, 2.0, index_base.instance_row(u, 1, t0, 'a'))
        writer.apply(self.engine, one, [u])
        out = writer.apply(self.engine, two, [u])
        self.assertEqual([u], out.written)
        self.assertEqual({u: (ids.index_id(1, 4), 'a', 0)}, self.held())
        self.assertEqual(('cell-2', 2.0),
                         (self.book(u).cell_uuid, self.book(u).read_at))

    def statements(self, fn):
        """``fn()``'s result, and ``[(verb, table)]`` of what it ran."""
        ran = []

        def record(conn, cursor, statement, *args):
            words = statement.split()
            table = (words[2] if words[0] in ('DELETE', 'INSERT') else
                     words[1] if words[0] == 'UPDATE' else None)
            ran.append((words[0], table))
        sa.event.listen(self.engine, 'before_cursor_execute', record)
        try:
            return fn(), [s for s in ran if s[0] != 'BEGIN']
        finally:
            sa.event.remove(self.engine, 'before_cursor_execute', record)

    def tags(self):
        with self.engine.connect() as conn:
            # SQLite's rowid: a row written again gets a new one.
            table = nova_models.Tag.__table__
            return [tuple(r) for r in conn.execute(sa.select(
                sa.literal_column('rowid'), table.c.tag).order_by(
                    table.c.tag))]

    def test_only_the_tables_that_changed_are_written(self):
        u, t0 = 'u-8', index_base.T0
        t1 = t0 + datetime.timedelta(seconds=1)
        writer.apply(self.engine, index_base.cell_read(
            self.CELL1, 1.0, index_base.instance_row(u, 1, t0, 'a'),
            tags={u: [{'resource_id': u, 'tag': 'x'}]}), [u])
        tags = self.tags()
        # Renamed: the instance row and the book are updated, the tags
        # left as they are; the generation moves, last, and says which
        # instance changed.
        out, ran = self.statements(lambda: writer.apply(
            self.engine, index_base.cell_read(
                self.CELL1, 2.0, index_base.instance_row(u, 1, t1, 'b'),
                tags={u: [{'resource_id': u, 'tag': 'x'}]}), [u]))
        self.assertEqual([u], out.written)
        self.assertEqual([('SELECT', None), ('SELECT', None),
                          ('UPDATE', 'instances'),
                          ('UPDATE', 'nova_ext_index_instances'),
                          ('UPDATE', 'nova_ext_index_generation'),
                          ('SELECT', None),
                          ('INSERT', 'nova_ext_index_changes')], ran)
        self.assertEqual({u: (ids.index_id(1, 3), 'b', 0)}, self.held())
        self.assertEqual(tags, self.tags())
        self.assertEqual(2.0, self.book(u).read_at)
        # Tagged: the tags and the book, not the instance row.
        _out, ran = self.statements(lambda: writer.apply(
            self.engine, index_base.cell_read(
                self.CELL1, 3.0, index_base.instance_row(u, 1, t1, 'b'),
                tags={u: [{'resource_id': u, 'tag': 'x'},
                          {'resource_id': u, 'tag': 'y'}]}), [u]))
        self.assertEqual([('SELECT', None), ('DELETE', 'tags'),
                          ('INSERT', 'tags'),
                          ('UPDATE', 'nova_ext_index_instances'),
                          ('UPDATE', 'nova_ext_index_generation'),
                          ('SELECT', None),
                          ('INSERT', 'nova_ext_index_changes')], ran)
        self.assertEqual(['x', 'y'], [tag for _id, tag in self.tags()])
        self.assertEqual({u: (ids.index_id(1, 3), 'b', 0)}, self.held())

    def test_a_changed_request_spec_moves_the_version_alone(self):
        u, t0 = 'u-11', index_base.T0

        def read(at, spec):
            r = index_base.cell_read(
                self.CELL1, at, index_base.instance_row(u, 1, t0, 'a'))
            if spec is not None:
                r.request_specs[u] = spec
            return r
        writer.apply(self.engine, read(1.0, '{"az": null}'), [u])
        first = self.book(u)
        self.assertEqual(writer.spec_digest('{"az": null}'),
                         writer.book_spec_digest(first.digest))
        self.assertNotEqual(writer.spec_digest('{"az": "nova"}'),
                            writer.spec_digest('{"az": null}'))
        # The same spec: only checked.
        writer.apply(self.engine, read(2.0, '{"az": null}'), [u])
        self.assertEqual((first.digest, 1.0), (self.book(u).digest,
                                               self.book(u).read_at))
        # Another spec: no row of Nova's written, the book's digest and
        # version moved, and the generation says which instance changed.
        _out, ran = self.statements(lambda: writer.apply(
            self.engine, read(3.0, '{"az": "nova"}'), [u]))
        self.assertEqual([('SELECT', None),
                          ('UPDATE', 'nova_ext_index_instances'),
                          ('UPDATE', 'nova_ext_index_generation'),
                          ('SELECT', None),
                          ('INSERT', 'nova_ext_index_changes')], ran)
        again = self.book(u)
        self.assertEqual(3.0, again.read_at)
        self.assertEqual(writer.spec_digest('{"az": "nova"}'),
                         writer.book_spec_digest(again.digest))
        self.assertEqual(first.digest[:writer.SPEC_AT - 1],
                         again.digest[:writer.SPEC_AT - 1])
        # The spec gone (archived with its server): written too.
        writer.apply(self.engine, read(4.0, None), [u])
        self.assertEqual(writer.spec_digest(None),
                         writer.book_spec_digest(self.book(u).digest))

    def test_a_book_digest_without_a_spec_part_has_no_spec_digest(self):
        self.assertIsNone(writer.book_spec_digest(None))
        self.assertIsNone(writer.book_spec_digest(
            '0' * (writer.SPEC_AT - 1)))
        whole = '0' * (writer.SPEC_AT - 1) + 'a' * writer.WIDTH
        self.assertEqual('a' * writer.WIDTH, writer.book_spec_digest(whole))

    def test_a_digest_of_another_layout_writes_every_table(self):
        u, t0 = 'u-9', index_base.T0
        t1 = t0 + datetime.timedelta(seconds=1)
        writer.apply(self.engine, index_base.cell_read(
            self.CELL1, 1.0, index_base.instance_row(u, 1, t0, 'a'),
            tags={u: [{'resource_id': u, 'tag': 'x'}]}), [u])
        # As a row written before the book kept a digest per table: one
        # digest of every row.
        with self.engine.begin() as conn:
            conn.execute(sa.update(schema.INSTANCES).values(digest='0' * 64))
        _out, ran = self.statements(lambda: writer.apply(
            self.engine, index_base.cell_read(
                self.CELL1, 2.0, index_base.instance_row(u, 1, t1, 'b'),
                tags={u: [{'resource_id': u, 'tag': 'x'}]}), [u]))
        written = {table for verb, table in ran if verb == 'INSERT'}
        self.assertIn('tags', written)
        self.assertIn('instances', written)
        self.assertEqual(writer.WIDTH * len(writer.PARTS),
                         len(self.book(u).digest))

    def test_a_rewrite_writes_rows_the_book_says_are_held(self):
        u, t0 = 'u-10', index_base.T0

        def read(at):
            return index_base.cell_read(
                self.CELL1, at, index_base.instance_row(u, 1, t0, 'a'),
                tags={u: [{'resource_id': u, 'tag': 'x'}]})
        writer.apply(self.engine, read(1.0), [u])
        # The index's rows no longer are the cell's (a repair's case).
        with self.engine.begin() as conn:
            conn.execute(sa.update(nova_models.Tag.__table__).values(
                tag='damaged'))
        writer.apply(self.engine, read(2.0), [u])
        self.assertEqual(['damaged'], [tag for _id, tag in self.tags()])
        out = writer.apply(self.engine, read(3.0), [u], rewrite=True)
        self.assertEqual([u], out.written)
        self.assertEqual(['x'], [tag for _id, tag in self.tags()])
        self.assertEqual(3.0, self.book(u).read_at)

    def test_an_update_keeps_the_cells_updated_at(self):
        # Nova soft-deletes a row without touching its updated_at; the
        # index's row, updated in place, keeps it too.
        u, t0 = 'u-11', index_base.T0
        writer.apply(self.engine, index_base.cell_read(
            self.CELL1, 1.0, index_base.instance_row(u, 1, t0, 'a')), [u])
        writer.apply(self.engine, index_base.cell_read(
            self.CELL1, 2.0, index_base.instance_row(u, 1, t0, 'a',
                                                     deleted=True)), [u])
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(source.INSTANCES)).one()
        self.assertEqual((t0, ids.index_id(1, 3)),
                         (row.updated_at, row.deleted))
