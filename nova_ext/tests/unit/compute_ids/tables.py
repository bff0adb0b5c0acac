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
"""SQLite copies of Nova's tables, seeded for the compute id links.

The copies keep Nova's columns but not its unique constraints, so that
the ambiguity older databases can hold (two live nodes with one name) can
be seeded.
"""

import sqlalchemy as sa

from nova_ext.compute_ids import migrations as ci
from nova_ext.tests.unit import base


def _copy(table, metadata):
    return sa.Table(table.name, metadata,
                    *[sa.Column(c.name, c.type, primary_key=c.primary_key)
                      for c in table.c])


class LinkTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        metadata = sa.MetaData()
        self.tables = [_copy(t, metadata) for t in ci._tables()]
        self.instances, self.migrations, self.nodes, self.services = (
            self.tables)
        self.engine = sa.create_engine('sqlite://')
        metadata.create_all(self.engine)
        self.specs = ci.specs(self.tables)
        self.spec = self.specs['instance-compute-id']
        with self.engine.begin() as conn:
            conn.execute(sa.insert(self.services), [
                dict(id=1, host='h1', binary='nova-compute', deleted=0),
                dict(id=2, host='h1', binary='nova-scheduler', deleted=0),
                dict(id=3, host='h5', binary='nova-compute', deleted=3)])
            conn.execute(sa.insert(self.nodes), [
                dict(id=10, host='h1', hypervisor_hostname='n1', deleted=0),
                dict(id=11, host='h2', hypervisor_hostname='n2', deleted=0),
                dict(id=12, host='h2', hypervisor_hostname='n2', deleted=0),
                dict(id=13, host='h3', hypervisor_hostname='n3',
                     deleted=13),
                dict(id=14, host='new', hypervisor_hostname='n4',
                     deleted=0),
                dict(id=15, host='h5', hypervisor_hostname='n5', deleted=0)])
            # Unlinkable rows first, so that they would fill every batch.
            rows = [(None, None), (None, None), ('h2', 'n2'), ('h3', 'n3'),
                    ('old', 'n4'), ('h7', 'n7'), ('h1', 'n1'), ('h1', 'n1'),
                    ('h1', 'n1')]
            conn.execute(sa.insert(self.instances), [
                dict(id=i, uuid='i%d' % i, host=h, node=n, deleted=0)
                for i, (h, n) in enumerate(rows, 1)])
            # Deleted instances are left alone.
            conn.execute(sa.insert(self.instances).values(
                id=99, uuid='gone', host='h1', node='n1', deleted=99))

    def run_hook(self, spec, max_count):
        with self.engine.begin() as conn:
            return ci.migrate(conn, spec, max_count)

    def column(self, table, column):
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(table.c.id, table.c[column]))
            return {r[0]: r[1] for r in rows}
