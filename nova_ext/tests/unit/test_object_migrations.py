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
"""The compute id links on SQLite copies of Nova's tables, and the runner.

The copies keep Nova's columns but not its unique constraints, so that
the ambiguity older databases can hold (two live nodes with one name) can
be seeded.
"""

import argparse
import contextlib
import io
import json
from unittest import mock

import sqlalchemy as sa

from nova_ext.cmd import compute_ids as audit_cmd
from nova_ext.cmd import manage
from nova_ext.cmd import manage_db
from nova_ext.object_migrations import base as om_base
from nova_ext.object_migrations import compute_ids as ci
from nova_ext.tests.unit import base


def _copy(table, metadata):
    return sa.Table(table.name, metadata,
                    *[sa.Column(c.name, c.type, primary_key=c.primary_key)
                      for c in table.c])


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


class TestInstanceLinks(LinkTestCase):

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


class TestOtherLinks(LinkTestCase):

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


def _table_rows(text, title):
    """The rows of the table printed after ``title``, as header dicts."""
    lines = text.split(title + '\n', 1)[1].splitlines()
    cells = [[c.strip() for c in line.strip('|').split('|')]
             for line in lines if line.startswith('|')]
    return [dict(zip(cells[0], row)) for row in cells[1:]]


class TestAudit(LinkTestCase):
    """nova-ext-manage compute-ids audit, on the same tables."""

    def setUp(self):
        super().setUp()
        with self.engine.begin() as conn:
            # An instance linked to h2/n2 while on h1/n1.
            conn.execute(sa.update(self.instances).where(
                self.instances.c.id == 7).values(compute_id=11))
            # Migrations from before they had a uuid exist: the first.
            conn.execute(sa.insert(self.migrations), [
                dict(id=1, uuid=None, dest_compute='h2', dest_node='n2',
                     dest_compute_id=None, deleted=0),
                dict(id=2, uuid='m2', dest_compute='h3', dest_node='n3',
                     dest_compute_id=13, deleted=0)])
            # The node of a renamed host, still linked to the old service.
            conn.execute(sa.update(self.nodes).where(
                self.nodes.c.id == 14).values(uuid='c14', service_id=1))
        with mock.patch.object(ci, '_tables', return_value=self.tables), \
                self.engine.connect() as conn:
            self.report = {'cell1': audit_cmd.audit(conn)}

    def test_table_columns_hold_what_their_headers_say(self):
        out = io.StringIO()
        audit_cmd._print_tables(self.report, out)
        rows = _table_rows(out.getvalue(),
                           'Disagreements and unlinkable records:')
        header = ('Cell', 'Kind', 'Id', 'UUID', 'Host', 'Node', 'Reason')
        self.assertEqual([header] * len(rows), [tuple(r) for r in rows])
        self.assertEqual([
            ('instances', '7', 'i7', 'h1', 'n1', 'compute node 11 is h2/n2'),
            ('migrations', '2', 'm2', 'h3', 'n3',
             'compute node 13 is deleted'),
            ('compute_nodes', '14', 'c14', 'new', 'n4',
             'service 1 is on host h1 (renamed?)'),
            ('instance-compute-id', '1', 'i1', '-', '-', ci.NO_KEY),
            ('instance-compute-id', '2', 'i2', '-', '-', ci.NO_KEY),
            ('instance-compute-id', '3', 'i3', 'h2', 'n2', ci.AMBIGUOUS),
            ('instance-compute-id', '4', 'i4', 'h3', 'n3',
             ci.DELETED_TARGET),
            ('instance-compute-id', '5', 'i5', 'old', 'n4', ci.RENAMED),
            ('instance-compute-id', '6', 'i6', 'h7', 'n7', ci.NOT_FOUND),
            ('migration-dest-compute-id', '1', '-', 'h2', 'n2',
             ci.AMBIGUOUS),
            ('compute-node-service-id', '11', '-', 'h2', 'n2',
             ci.NOT_FOUND),
            ('compute-node-service-id', '12', '-', 'h2', 'n2',
             ci.NOT_FOUND),
            ('compute-node-service-id', '15', '-', 'h5', 'n5',
             ci.DELETED_TARGET),
        ], [tuple(r[h] for h in header[1:]) for r in rows])
        self.assertEqual({'cell1'}, {r['Cell'] for r in rows})

    def test_json_records_name_the_record(self):
        unlinked = self.report['cell1']['unlinked']
        self.assertEqual(
            {'id': 5, 'uuid': 'i5', 'host': 'old', 'node': 'n4',
             'key': ['old', 'n4'], 'reason': ci.RENAMED},
            unlinked['instance-compute-id']['records'][4])
        self.assertEqual(
            {'id': 15, 'uuid': None, 'host': 'h5', 'node': 'n5',
             'key': ['h5'], 'reason': ci.DELETED_TARGET},
            unlinked['compute-node-service-id']['records'][-1])
        self.assertEqual(
            {'id': 7, 'uuid': 'i7', 'host': 'h1', 'node': 'n1',
             'compute_id': 11, 'reason': 'compute node 11 is h2/n2'},
            self.report['cell1']['instances'][0])

    def test_listed_records_are_limited_not_counted(self):
        with mock.patch.object(ci, '_tables', return_value=self.tables), \
                mock.patch.object(audit_cmd, 'LIST_LIMIT', 2), \
                self.engine.connect() as conn:
            unlinked = audit_cmd._unlinked(conn)['instance-compute-id']
        self.assertEqual([1, 2], [r['id'] for r in unlinked['records']])
        self.assertEqual(6, sum(unlinked['unlinkable'].values()))


class _Fake(om_base.ObjectMigration):

    def __init__(self, results, left=0, fail=False):
        self.results, self.left, self.fail = list(results), left, fail
        self.calls = []

    def __call__(self, context, max_count):
        self.calls.append(max_count)
        if self.fail:
            raise RuntimeError('boom')
        return self.results.pop(0) if self.results else (0, 0)

    def remaining(self, context):
        return self.left


class TestRunner(base.TestCase):

    def test_batch_budget_is_shared(self):
        a, b, c = _Fake([(3, 3)]), _Fake([(5, 2)]), _Fake([])
        results, errors = manage_db.run_batch(
            None, [('a', a), ('b', b), ('c', c)], 5)
        self.assertEqual({'a': (3, 3), 'b': (5, 2)}, results)
        self.assertEqual(([5], [2], []), (a.calls, b.calls, c.calls))
        self.assertEqual([], errors)

    def run_cmd(self, migrations, max_count=None, fmt=None):
        argv = ['db', 'online_data_migrations']
        if max_count:
            argv += ['--max-count', str(max_count)]
        if fmt:
            argv += ['--format', fmt]
        args = manage.build_parser().parse_args(argv)
        cell = mock.Mock(identity='cell1')
        out = io.StringIO()
        with mock.patch('nova_ext.object_migrations.load_migrations',
                        return_value=migrations), \
                mock.patch('nova.context.target_cell',
                           lambda ctx, cell: contextlib.nullcontext(ctx)):
            code = manage_db.run(None, None, args, out=out, cells=[cell])
        return code, out.getvalue()

    def test_exit_codes(self):
        fake = _Fake([(1, 1), (1, 1), (0, 0)])
        code, out = self.run_cmd([('a', fake)])
        self.assertEqual(0, code, out)
        self.assertEqual([50, 50, 50], fake.calls)
        self.assertRegex(out, r'\|\s+a\s+\|\s+cell1\s+\|\s+2\s+\|\s+2\s+'
                              r'\|\s+0\s+\|')
        self.assertEqual(1, self.run_cmd([('a', _Fake([(1, 1)], left=4))],
                                         max_count=1)[0])
        code, out = self.run_cmd([('a', _Fake([], fail=True)),
                                  ('b', _Fake([(1, 1)]))])
        self.assertEqual(2, code)
        self.assertIn('a in cell1 failed: RuntimeError: boom', out)
        self.assertEqual((0, 'No migrations enabled in '
                          '[nova_ext_object_migrations] migrations.\n'),
                         self.run_cmd([]))

    def test_json(self):
        code, out = self.run_cmd([('a', _Fake([], fail=True)),
                                  ('b', _Fake([(3, 1), (0, 0)], left=2))],
                                 fmt='json')
        self.assertEqual(2, code)
        self.assertEqual(
            {'migrations': [
                {'migration': 'a', 'cell': 'cell1', 'found': 0, 'done': 0,
                 'remaining': 0},
                {'migration': 'b', 'cell': 'cell1', 'found': 3, 'done': 1,
                 'remaining': 2}],
             # One per batch it raised in: the first did work (b's), so
             # a second ran.
             'errors': [{'migration': 'a', 'cell': 'cell1',
                         'error': 'RuntimeError: boom'}] * 2},
            json.loads(out))
        self.assertEqual({'migrations': [], 'errors': []},
                         json.loads(self.run_cmd([], fmt='json')[1]))

    def test_bad_max_count(self):
        args = argparse.Namespace(max_count=0)
        self.assertEqual(127, manage_db.run(None, None, args,
                                            out=io.StringIO()))
