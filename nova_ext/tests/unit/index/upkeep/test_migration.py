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
"""The index schema, on a real SQLite index database."""

import os

import fixtures
import sqlalchemy as sa

from nova_ext.index.apply import source
from nova_ext.index import db
from nova_ext.index.marks import pending
from nova_ext.index import schema
from nova_ext.index.upkeep import migration
from nova_ext.tests.unit import base
from nova_ext.tests.unit.index import base as index_base


class TestMigration(index_base.IndexDBTestCase):

    def test_at_head_and_idempotent(self):
        self.assertEqual(migration.head(), migration.current(self.conf.conf))
        migration.db_sync(self.conf.conf)
        self.assertEqual(migration.head(), migration.current(self.conf.conf))

    def test_has_every_column_of_novas_tables(self):
        inspector = sa.inspect(self.engine)
        for table in [source.INSTANCES, source.SG_ASSOCIATIONS,
                      source.SECURITY_GROUPS] + [
                          t for t, _key in source.CHILDREN]:
            have = {c['name'] for c in inspector.get_columns(table.name)}
            self.assertEqual(set(table.c.keys()), have, table.name)


class TestNameSortIndexes(index_base.IndexDBTestCase):
    """A page sorted by name is read off an index, not sorted whole.

    The ORDER BY is Nova's for ``sort_key=display_name`` (see
    ``nova.db.utils.process_sort_params``: created_at and id follow, in
    the first key's direction).
    """

    def _plan(self, where, direction):
        order = ', '.join('%s %s' % (key, direction)
                          for key in ('display_name', 'created_at', 'id'))
        with self.engine.connect() as conn:
            rows = conn.exec_driver_sql(
                'EXPLAIN QUERY PLAN SELECT id FROM instances WHERE %s '
                'ORDER BY %s LIMIT 1000' % (where, order)).all()
        return ' / '.join(row[-1] for row in rows)

    def test_admin_and_project_pages_need_no_sort(self):
        for where in ("deleted = 0",
                      "project_id = 'p' AND deleted = 0"):
            for direction in ('asc', 'desc'):
                plan = self._plan(where, direction)
                self.assertNotIn('TEMP B-TREE', plan, (where, direction))
                self.assertIn('_name_idx', plan, (where, direction))


class TestBlockDeviceMappingMigration(base.TestCase):
    """0003 has an index made before it read every instance again."""

    def test_indexed_instances_marked_as_of_the_epoch(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        self.flags(connection='sqlite:///%s' % os.path.join(tmp, 'i.sqlite'),
                   group='nova_ext_index')
        db.reset()
        self.addCleanup(db.reset)
        migration.db_sync(self.conf.conf, revision='0002')
        engine = db.get_engine(self.conf.conf)
        with engine.begin() as conn:
            conn.execute(sa.insert(schema.INSTANCES), [
                {'uuid': u, 'cell_uuid': 'c1', 'source_id': n,
                 'read_at': 10.0} for n, u in enumerate(('a', 'b'), 1)])
        self.assertEqual(0.0, pending.oldest_age(engine, now=100.0))
        migration.db_sync(self.conf.conf)
        # Marks made before revision 0009 have number 0.
        self.assertEqual({'a': 0, 'b': 0}, pending.take(engine, 10))
        self.assertEqual(100.0, pending.oldest_age(engine, now=100.0))
