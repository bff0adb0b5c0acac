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
"""Reading instances and their related rows, from a real SQLite database.

The index has the cells' tables, so it stands for a cell here.
"""

import sqlalchemy as sa

from nova_ext.index.apply import source
from nova_ext.index.apply import writer
from nova_ext.tests.unit.index import base as index_base

CELL = index_base.Cell('cell-1', 3)


class TestReadRows(index_base.IndexDBTestCase):

    def setUp(self):
        super().setUp()
        rows = [index_base.instance_row('u%d' % n, n, index_base.T0,
                                        'server-%d' % n)
                for n in range(1, 4)]
        tags = {'u1': [{'resource_id': 'u1', 'tag': 'blue'}]}
        read = index_base.cell_read(CELL, 1.0, *rows, tags=tags)
        writer.apply(self.engine, read, [row['uuid'] for row in rows])

    def read(self, uuids):
        statements = []

        def count(conn, cursor, statement, parameters, *args):
            if statement.lstrip().upper().startswith('SELECT'):
                statements.append((statement, parameters))
        sa.event.listen(self.engine, 'before_cursor_execute', count)
        self.addCleanup(sa.event.remove, self.engine,
                        'before_cursor_execute', count)
        result = source.CellRead(CELL, 2.0, 2)
        with self.engine.connect() as conn:
            source.read_rows(conn.execute, result, uuids)
        return result, statements

    def every_row(self, uuids):
        """What a read of every related table would find, for comparison."""
        result = source.CellRead(CELL, 2.0, 2)
        with self.engine.connect() as conn:
            for row in conn.execute(sa.select(source.INSTANCES).where(
                    source.INSTANCES.c.uuid.in_(uuids))):
                result.instances[row.uuid] = dict(row._mapping)
            for table, key in source.CHILDREN:
                by_uuid = result.children.setdefault(table.name, {})
                for row in conn.execute(sa.select(table).where(
                        table.c[key].in_(list(result.instances))).order_by(
                        table.c.id if 'id' in table.c else table.c.tag)):
                    by_uuid.setdefault(row._mapping[key], []).append(
                        dict(row._mapping))
        return result

    def test_only_tables_holding_rows_are_read(self):
        result, statements = self.read(['u1', 'u2', 'gone'])
        self.assertEqual({'u1', 'u2'}, set(result.instances))
        self.assertEqual({'u1': [{'resource_id': 'u1', 'tag': 'blue'}]},
                         result.children['tags'])
        self.assertEqual({table.name for table, _key in source.CHILDREN},
                         set(result.children))
        self.assertEqual({}, result.children['instance_faults'])
        # The instances, which say which tables hold their rows; the tags,
        # of the one instance that has some.
        self.assertEqual(2, len(statements))
        self.assertIn('FROM tags', statements[1][0])
        self.assertEqual(('u1',), statements[1][1])

    def test_same_rows_as_a_read_of_every_table(self):
        uuids = ['u1', 'u2', 'u3', 'gone']
        read, _ = self.read(uuids)
        every = self.every_row(uuids)
        self.assertEqual(every.instances, read.instances)
        # Column for column, in the cell's order: the digests the index
        # keeps of what it holds do not change.
        self.assertEqual([list(every.instances[u]) for u in sorted(
            every.instances)], [list(read.instances[u]) for u in sorted(
                read.instances)])
        self.assertEqual(every.children, read.children)
        self.assertEqual({}, read.security_groups)
        self.assertEqual([writer.digest(every, u) for u in uuids[:3]],
                         [writer.digest(read, u) for u in uuids[:3]])

    def test_nothing_else_is_read_of_instances_gone(self):
        result, statements = self.read(['gone'])
        self.assertEqual({}, result.instances)
        self.assertEqual(1, len(statements))

    def test_a_value_outside_its_enum_refuses_that_instance_only(self):
        # SQLite stores what a hand edit writes; read through its enum type,
        # the value would fail the statement, every instance of it.
        with self.engine.begin() as conn:
            conn.execute(sa.update(source.INSTANCES).where(
                source.INSTANCES.c.uuid == 'u2').values(locked_by='x'))
            conn.execute(sa.update(source.INSTANCES).where(
                source.INSTANCES.c.uuid == 'u3').values(locked_by='admin'))
        result, _statements = self.read(['u1', 'u2', 'u3'])
        self.assertEqual({'u1', 'u3'}, set(result.instances))
        self.assertEqual('admin', result.instances['u3']['locked_by'])
        self.assertEqual(
            {'u2': "locked_by 'x' is not one of ['admin', 'owner']"},
            result.refused)
        # Verify's fingerprints read the stored text too.
        with self.engine.connect() as conn:
            prints = source.fingerprints(conn.execute, ['u1', 'u2'])
        self.assertEqual({'u1', 'u2'}, set(prints))

    def test_security_groups_of_the_instances_in_them(self):
        with self.engine.begin() as conn:
            group = conn.execute(sa.insert(source.SECURITY_GROUPS).values(
                name='web', project_id='p', deleted=0)).inserted_primary_key[0]
            conn.execute(sa.insert(source.SG_ASSOCIATIONS).values(
                security_group_id=group, instance_uuid='u2', deleted=0))
        result, statements = self.read(['u1', 'u2'])
        self.assertEqual(['u2'], list(result.security_groups))
        [(assoc, found)] = result.security_groups['u2']
        self.assertEqual(('u2', group), (assoc['instance_uuid'],
                                         assoc['security_group_id']))
        self.assertEqual(('web', group), (found['name'], found['id']))
        self.assertEqual(('u2',), statements[-1][1])
