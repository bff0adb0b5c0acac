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
"""The compute id links on SQLite copies of Nova's tables."""

import sqlalchemy as sa

from nova_ext.compute_ids import migrations as ci
from nova_ext.tests.unit import base
from nova_ext.tests.unit.compute_ids import tables


class TestClassify(base.TestCase):

    live = {('h1', 'n1'): [1], ('h2', 'n2'): [2, 3]}

    def classify(self, key, names=frozenset()):
        return ci.classify(key, self.live, {('h9', 'n9')}, names)

    def test_reasons(self):
        self.assertEqual(ci.LINKABLE, self.classify(('h1', 'n1')))
        self.assertEqual(ci.NO_KEY, self.classify((None, 'n1')))
        self.assertEqual(ci.NO_KEY, self.classify(('h1', None)))
        self.assertEqual(ci.AMBIGUOUS, self.classify(('h2', 'n2')))
        self.assertEqual(ci.DELETED_TARGET, self.classify(('h9', 'n9')))
        self.assertEqual(ci.NOT_FOUND, self.classify(('h8', 'n8')))
        self.assertEqual(ci.RENAMED, self.classify(('old', 'n1'), {'n1'}))


class TestInstanceLinks(tables.LinkTestCase):

    def test_batches_make_progress_past_unlinkable_rows(self):
        runs = []
        while not runs or runs[-1][0]:
            runs.append(self.run_hook(self.spec, 1))
        self.assertEqual([(1, 1)] * 3 + [(0, 0)], runs)
        links = self.column(self.instances, 'compute_id')
        self.assertEqual({7: 10, 8: 10, 9: 10},
                         {k: v for k, v in links.items() if v})
        self.assertIsNone(links[99])
        # Idempotent: nothing is found again.
        self.assertEqual((0, 0), self.run_hook(self.spec, 50))

    def test_unlinkable_reasons_and_remaining(self):
        with self.engine.connect() as conn:
            self.assertEqual(3, ci.remaining(conn, self.spec))
            records = ci.unlinkable(conn, self.spec)
        reasons = {i: why for i, _, why in records}
        self.assertEqual({1: ci.NO_KEY, 2: ci.NO_KEY, 3: ci.AMBIGUOUS,
                          4: ci.DELETED_TARGET, 5: ci.RENAMED,
                          6: ci.NOT_FOUND}, reasons)
        self.run_hook(self.spec, None)
        with self.engine.connect() as conn:
            self.assertEqual(0, ci.remaining(conn, self.spec))
            self.assertEqual(6, len(ci.unlinkable(conn, self.spec)))
            self.assertEqual(2, len(ci.unlinkable(conn, self.spec, 2)))

    def test_compare_and_set(self):
        with self.engine.begin() as conn:
            stale = ci.candidates(conn, self.spec, 10)
        self.assertEqual([(7, 10), (8, 10), (9, 10)], stale)
        with self.engine.begin() as conn:
            conn.execute(sa.update(self.instances).where(
                self.instances.c.id == 8).values(compute_id=15))
        with self.engine.begin() as conn:
            self.assertEqual(2, ci.link(conn, self.spec, stale))
            self.assertEqual(0, ci.link(conn, self.spec, stale))
        self.assertEqual(15, self.column(self.instances, 'compute_id')[8])


class TestOtherLinks(tables.LinkTestCase):

    def test_migration_dest_compute_id(self):
        with self.engine.begin() as conn:
            conn.execute(sa.insert(self.migrations), [
                dict(id=1, dest_compute='h1', dest_node=None, deleted=0),
                dict(id=2, dest_compute='h2', dest_node='n2', deleted=0),
                dict(id=3, dest_compute='h1', dest_node='n1', deleted=0)])
        spec = self.specs['migration-dest-compute-id']
        self.assertEqual((1, 1), self.run_hook(spec, 5))
        self.assertEqual({1: None, 2: None, 3: 10},
                         self.column(self.migrations, 'dest_compute_id'))
        with self.engine.connect() as conn:
            # No dest_node yet: nothing to link to, nothing to report.
            self.assertEqual([(2, ('h2', 'n2'), ci.AMBIGUOUS)],
                             ci.unlinkable(conn, spec))

    def test_compute_node_service_id(self):
        spec = self.specs['compute-node-service-id']
        self.assertEqual((1, 1), self.run_hook(spec, 5))
        self.assertEqual(1, self.column(self.nodes, 'service_id')[10])
        with self.engine.connect() as conn:
            reasons = {i: why for i, _, why in ci.unlinkable(conn, spec)}
        # n2 twice, n4 (renamed host): no service; h5's service deleted.
        self.assertEqual({11: ci.NOT_FOUND, 12: ci.NOT_FOUND,
                          14: ci.NOT_FOUND, 15: ci.DELETED_TARGET}, reasons)
