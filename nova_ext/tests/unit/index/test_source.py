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

import fixtures
import sqlalchemy as sa

from nova_ext.index import source
from nova_ext.index import writer
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

        def count(conn, cursor, statement, *args):
            if statement.lstrip().upper().startswith('SELECT'):
                statements.append(statement)
        sa.event.listen(self.engine, 'before_cursor_execute', count)
        self.addCleanup(sa.event.remove, self.engine,
                        'before_cursor_execute', count)
        result = source.CellRead(CELL, 2.0, 2)
        with self.engine.connect() as conn:
            source.read_rows(conn.execute, result, uuids)
        return result, len(statements)

    def test_only_tables_holding_rows_are_read(self):
        result, statements = self.read(['u1', 'u2', 'gone'])
        self.assertEqual({'u1', 'u2'}, set(result.instances))
        self.assertEqual({'u1': [{'resource_id': 'u1', 'tag': 'blue'}]},
                         result.children['tags'])
        self.assertEqual({table.name for table, _key in source.CHILDREN},
                         set(result.children))
        self.assertEqual({}, result.children['instance_faults'])
        # The instances, the probe, the tags.
        self.assertEqual(3, statements)

    def test_same_rows_with_and_without_the_probe(self):
        probed, _ = self.read(['u1', 'u2', 'u3'])
        self.useFixture(fixtures.MockPatchObject(source, 'PROBE_MAX', 2))
        every, statements = self.read(['u1', 'u2', 'u3'])
        self.assertEqual(1 + len(source.CHILDREN) + 1, statements)
        self.assertEqual((probed.instances, probed.security_groups),
                         (every.instances, every.security_groups))
        self.assertEqual(probed.children, every.children)
        self.assertEqual(
            [writer.digest(probed, u) for u in ('u1', 'u2', 'u3')],
            [writer.digest(every, u) for u in ('u1', 'u2', 'u3')])

    def test_nothing_else_is_read_of_instances_gone(self):
        result, statements = self.read(['gone'])
        self.assertEqual({}, result.instances)
        self.assertEqual(1, statements)
