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
"""Compute object id linkage against a live multi-cell cloud.

Servers are created through the API, then their links are NULLed with SQL
in the cell databases, as a cloud upgraded from before the links existed
looks; unlinkable rows (host NULL: shelved-offloaded, failed builds in
cell0, a host left half-built) are mixed in before the linkable ones.
"""

import contextlib
import io
import json
import threading

from nova.conductor import rpcapi as conductor_rpcapi
from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova.db.main import models
from nova.objects import instance as instance_obj
from nova.tests import fixtures as nova_fixtures
from oslo_upgradecheck import upgradecheck
from oslo_utils import uuidutils
import sqlalchemy as sa

from nova_ext.cmd import compute_ids as audit_cmd
from nova_ext.cmd import manage
from nova_ext.cmd import manage_db
from nova_ext.cmd import status as status_cmd
from nova_ext.compute_ids import migrations as compute_ids
from nova_ext import conf as ext_conf
from nova_ext.seams import compute as compute_ep
from nova_ext.tests.functional import base

INSTANCES = models.Instance.__table__
MIGRATIONS = models.Migration.__table__
NODES = models.ComputeNode.__table__

ALL = ['instance-compute-id', 'migration-dest-compute-id',
       'compute-node-service-id']


class ComputeIdsTestCase(base.NovaExtTestCase):

    def setUp(self):
        super().setUp()
        self.ctx = nova_context.get_admin_context()
        self.flags(migrations=ALL, group='nova_ext_object_migrations')

    @contextlib.contextmanager
    def cell(self, name):
        with nova_context.target_cell(
                self.ctx, self.cell_mappings[name]) as cctx:
            yield cctx

    @contextlib.contextmanager
    def conn(self, name):
        with self.cell(name) as cctx:
            manager = main_db_api.get_context_manager(cctx)
            with manager.writer.using(cctx) as session:
                yield session.connection()

    def sql(self, name, statement):
        with self.conn(name) as conn:
            return conn.execute(statement)

    def links(self, name):
        with self.conn(name) as conn:
            return {r.uuid: r.compute_id for r in conn.execute(
                sa.select(INSTANCES.c.uuid, INSTANCES.c.compute_id))}

    def seed(self):
        """Unlinkable rows first (lowest ids), then linkable ones."""
        # Explicit flavors: the harness' default is the first listed.
        flavor = self._create_flavor(disk=10 ** 7)
        small = self._create_flavor(memory_mb=512, vcpu=1, disk=1)
        # Failed builds: ERROR servers in cell0, no host.
        self.errors = [self._create_server(flavor_id=flavor, networks='none',
                                           expected_state='ERROR')
                       for _ in range(2)]
        self.flags(shelved_offload_time=0)
        off = self._create_server(host='compute1-1', flavor_id=small,
                                  networks='none')
        self._shelve_server(off, 'SHELVED_OFFLOADED')
        half = self._create_server(host='compute1-1', flavor_id=small,
                                   networks='none')
        self.linkable = {
            'cell1': [self._create_server(host='compute1-1', flavor_id=small,
                                          networks='none')['id']
                      for _ in range(2)],
            'cell2': [self._create_server(host='compute2-1', flavor_id=small,
                                          networks='none')['id']
                      for _ in range(2)],
        }
        self.unlinkable = [off['id'], half['id']]
        # A build that died before the host was set.
        self.sql('cell1', sa.update(INSTANCES).where(
            INSTANCES.c.uuid == half['id']).values(host=None, node=None))
        self.nodes = {}
        for name in ('cell1', 'cell2'):
            self.sql(name, sa.update(INSTANCES).values(compute_id=None))
            with self.conn(name) as conn:
                node = conn.execute(sa.select(NODES).where(
                    NODES.c.deleted == 0)).one()
                self.nodes[name] = node
                conn.execute(sa.insert(MIGRATIONS).values(
                    uuid=uuidutils.generate_uuid(),
                    instance_uuid=self.linkable[name][0],
                    source_compute=node.host, dest_compute=node.host,
                    source_node=node.hypervisor_hostname,
                    dest_node=node.hypervisor_hostname,
                    migration_type='resize', status='finished', deleted=0))
                conn.execute(sa.update(NODES).values(service_id=None))

    def odm(self, max_count=None):
        argv = ['db', 'online_data_migrations']
        if max_count:
            argv += ['--max-count', str(max_count)]
        args = manage.build_parser().parse_args(argv)
        out = io.StringIO()
        code = manage_db.run(self.ctx, ext_conf.CONF, args, out=out)
        return code, out.getvalue()

    def check(self):
        return status_cmd.Checks(ext_conf.CONF, self.ctx)._check_compute_ids()

    def audit(self):
        args = manage.build_parser().parse_args(
            ['compute-ids', 'audit', '--format', 'json'])
        out = io.StringIO()
        code = audit_cmd.run(self.ctx, ext_conf.CONF, args, out=out)
        return code, json.loads(out.getvalue())

    def audit_rows(self):
        """The audit's table of records, one header-keyed dict a row."""
        args = manage.build_parser().parse_args(['compute-ids', 'audit'])
        out = io.StringIO()
        audit_cmd.run(self.ctx, ext_conf.CONF, args, out=out)
        text = out.getvalue().split(
            'Disagreements and unlinkable records:\n', 1)[1]
        cells = [[c.strip() for c in line.strip('|').split('|')]
                 for line in text.splitlines() if line.startswith('|')]
        return [dict(zip(cells[0], row)) for row in cells[1:]]

    def assertAllLinked(self):
        for name in ('cell1', 'cell2'):
            links = self.links(name)
            for uuid in self.linkable[name]:
                self.assertEqual(self.nodes[name].id, links[uuid], uuid)
        links = self.links('cell1')
        for uuid in self.unlinkable:
            self.assertIsNone(links[uuid], uuid)


class TestComputeIds(ComputeIdsTestCase):

    def test_side_by_side_with_nova(self):
        self.seed()
        # Nova's own migration, --max-count 1, as nova-manage runs it
        # against one cell database: the unlinkable row fills every batch.
        nova = []
        with self.cell('cell1') as cctx:
            for _ in range(5):
                nova.append(instance_obj.populate_instance_compute_id(
                    cctx, 1))
        self.assertEqual([(1, 0)] * 5, nova)
        self.assertEqual({None}, set(self.links('cell1').values()))
        with self.cell('cell0') as cctx:
            self.assertEqual(
                (1, 0), instance_obj.populate_instance_compute_id(cctx, 1))

        # nova_ext's hook, same data, same batch size: only linkable rows.
        hook = compute_ids.InstanceComputeId()
        ext = {}
        for name in ('cell0', 'cell1', 'cell2'):
            with self.cell(name) as cctx:
                runs = []
                while not runs or runs[-1][0]:
                    runs.append(hook(cctx, 1))
                ext[name] = runs
        self.assertEqual([(0, 0)], ext['cell0'])
        self.assertEqual([(1, 1), (1, 1), (0, 0)], ext['cell1'])
        self.assertEqual([(1, 1), (1, 1), (0, 0)], ext['cell2'])
        self.assertAllLinked()
        with self.cell('cell1') as cctx:
            reasons = sorted(r for _, _, r in hook.unlinkable(cctx))
        self.assertEqual([compute_ids.NO_KEY] * 2, reasons)
        with self.cell('cell0') as cctx:
            self.assertEqual([compute_ids.NO_KEY] * 2,
                             [r for _, _, r in hook.unlinkable(cctx)])

    def test_manage_batches_status_and_repeat(self):
        self.seed()
        self.assertEqual(upgradecheck.Code.FAILURE, self.check().code)
        codes = []
        for _ in range(10):
            code, out = self.odm(max_count=1)
            codes.append(code)
            if code != 1:
                break
        self.assertEqual(0, codes[-1], out)
        self.assertIn(1, codes)
        self.assertAllLinked()
        for name in ('cell1', 'cell2'):
            with self.conn(name) as conn:
                self.assertEqual(
                    [self.nodes[name].id], [r.dest_compute_id for r in
                                            conn.execute(sa.select(
                                                MIGRATIONS))])
                self.assertIsNotNone(conn.execute(sa.select(
                    NODES.c.service_id)).scalar())
        result = self.check()
        self.assertEqual(upgradecheck.Code.SUCCESS, result.code,
                         result.details)
        # Repeated runs are no-ops.
        before = {n: self.links(n) for n in ('cell1', 'cell2')}
        code, out = self.odm()
        self.assertEqual(0, code, out)
        self.assertNotIn('| 1 ', out)
        self.assertEqual(before, {n: self.links(n)
                                  for n in ('cell1', 'cell2')})
        code, report = self.audit()
        self.assertEqual(0, code, report)
        self.assertEqual({'no_host': 2}, report['cell1']['unlinked'][
            'instance-compute-id']['unlinkable'])

    def test_renamed_host_is_reported_not_written(self):
        self.seed()
        node = self.nodes['cell2']
        self.sql('cell2', sa.update(NODES).where(NODES.c.id == node.id)
                 .values(host='compute2-renamed'))
        code, out = self.odm()
        self.assertEqual(0, code, out)
        links = self.links('cell2')
        for uuid in self.linkable['cell2']:
            self.assertIsNone(links[uuid])
        with self.conn('cell2') as conn:
            self.assertIsNone(conn.execute(sa.select(
                NODES.c.service_id)).scalar())
        self.assertEqual(upgradecheck.Code.SUCCESS, self.check().code)
        code, report = self.audit()
        unlinked = report['cell2']['unlinked']
        self.assertEqual({'renamed_host': 2},
                         unlinked['instance-compute-id']['unlinkable'])
        self.assertEqual({'renamed_host': 1},
                         unlinked['migration-dest-compute-id']['unlinkable'])
        self.assertEqual({'not_found': 1},
                         unlinked['compute-node-service-id']['unlinkable'])
        rows = [r for r in self.audit_rows() if r['Cell'] == 'cell2']
        self.assertEqual(
            sorted((uuid, node.host, node.hypervisor_hostname,
                    'renamed_host') for uuid in self.linkable['cell2']),
            sorted((r['UUID'], r['Host'], r['Node'], r['Reason'])
                   for r in rows if r['Kind'] == 'instance-compute-id'))
        self.assertEqual(
            [('compute-node-service-id', str(node.id), node.uuid,
              'compute2-renamed', node.hypervisor_hostname, 'not_found')],
            [(r['Kind'], r['Id'], r['UUID'], r['Host'], r['Node'],
              r['Reason']) for r in rows
             if r['Kind'] == 'compute-node-service-id'])

        # Links made before a rename now disagree; the audit says so.
        self.sql('cell2', sa.update(NODES).where(NODES.c.id == node.id)
                 .values(host=node.host))
        self.assertEqual(0, self.odm()[0])
        self.sql('cell2', sa.update(NODES).where(NODES.c.id == node.id)
                 .values(host='compute2-renamed'))
        code, report = self.audit()
        self.assertEqual(1, code)
        self.assertEqual(sorted(self.linkable['cell2']), sorted(
            r['uuid'] for r in report['cell2']['instances']))
        self.assertEqual(1, len(report['cell2']['migrations']))
        self.assertIn('renamed?', report['cell2']['compute_nodes'][0][
            'reason'])

    def test_concurrent_runs(self):
        self.seed()
        hook = compute_ids.InstanceComputeId()
        # Compare-and-set: a batch selected before another run linked the
        # same rows writes nothing and counts nothing as done.
        with self.conn('cell1') as conn:
            spec = compute_ids.spec(hook.name)
            stale = compute_ids.candidates(conn, spec, 10)
            self.assertEqual(2, len(stale))
        with self.cell('cell1') as cctx:
            self.assertEqual((2, 2), hook(cctx, 10))
        self.sql('cell1', sa.update(INSTANCES).where(
            INSTANCES.c.uuid == self.linkable['cell1'][0]).values(
                compute_id=self.nodes['cell2'].id))
        with self.conn('cell1') as conn:
            self.assertEqual(0, compute_ids.link(conn, spec, [
                (i, t + 1000) for i, t in stale]))
        self.assertEqual(self.nodes['cell2'].id,
                         self.links('cell1')[self.linkable['cell1'][0]])
        self.sql('cell1', sa.update(INSTANCES).values(compute_id=None))

        # Two runners at once, batches of one, every cell.
        results, errors = [], []
        start = threading.Barrier(2)

        def runner():
            try:
                start.wait()
                results.append(self.odm(max_count=1))
                results.append(self.odm())
            except Exception as e:
                errors.append(e)

        threads = [threading.Thread(target=runner) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertEqual([], errors)
        self.assertNotIn(2, [code for code, _ in results],
                         [out for _, out in results])
        self.assertAllLinked()
        self.assertEqual(0, self.odm()[0])


class _FromThisThread(object):
    """nova-compute's indirection API, for the thread that made it only.

    The harness runs every service in one process, where a global
    indirection API would send the conductor's own object calls back to
    itself; the conductor's threads see none, as in a process of its own.
    """

    def __init__(self):
        self.api = conductor_rpcapi.ConductorAPI()
        self.thread = threading.get_ident()
        self.calls = []

    def __bool__(self):
        return threading.get_ident() == self.thread

    def __getattr__(self, name):
        self.calls.append(name)
        return getattr(self.api, name)


class TestLinkAtStartup(ComputeIdsTestCase):
    """run_at_startup: a compute links its own host, via the conductor."""

    def setUp(self):
        super().setUp()
        self.flags(run_at_startup=True, startup_batch_size=1,
                   group='nova_ext_object_migrations')

    def as_compute(self):
        """From here on, this thread's objects go to the conductor."""
        self.compute_side = _FromThisThread()
        self.useFixture(nova_fixtures.IndirectionAPIFixture(
            self.compute_side))

    def _dest_ids(self, name):
        with self.conn(name) as conn:
            return [r[0] for r in conn.execute(
                sa.select(MIGRATIONS.c.dest_compute_id))]

    def _service_ids(self, name):
        with self.conn(name) as conn:
            return [r[0] for r in conn.execute(
                sa.select(NODES.c.service_id).where(NODES.c.deleted == 0))]

    def test_links_its_host_only(self):
        self.seed()
        self.as_compute()
        totals = compute_ep.run_for_host(self.ctx, ext_conf.CONF,
                                         'compute1-1')
        self.assertEqual({'instance-compute-id': [2, 2],
                          'migration-dest-compute-id': [1, 1],
                          'compute-node-service-id': [1, 1]}, totals)
        # Each batch was a call to the conductor.
        self.assertEqual(['object_class_action_versions'] * 3,
                         self.compute_side.calls)
        links = self.links('cell1')
        for uuid in self.linkable['cell1']:
            self.assertEqual(self.nodes['cell1'].id, links[uuid])
        for uuid in self.unlinkable:
            self.assertIsNone(links[uuid])
        self.assertEqual([self.nodes['cell1'].id], self._dest_ids('cell1'))
        self.assertNotIn(None, self._service_ids('cell1'))
        # The other cell's host is not this compute's business.
        links = self.links('cell2')
        self.assertEqual({None}, {links[u] for u in self.linkable['cell2']})
        self.assertEqual([None], self._dest_ids('cell2'))
        self.assertEqual([None], self._service_ids('cell2'))

        self.assertEqual({'instance-compute-id': [0, 0],
                          'migration-dest-compute-id': [0, 0],
                          'compute-node-service-id': [0, 0]},
                         compute_ep.run_for_host(self.ctx, ext_conf.CONF,
                                                 'compute1-1'))
        totals = compute_ep.run_for_host(self.ctx, ext_conf.CONF,
                                         'compute2-1')
        self.assertEqual([2, 2], totals['instance-compute-id'])
        self.assertAllLinked()

    def test_unmapped_host_links_nothing(self):
        self.as_compute()
        self.assertEqual(
            {'instance-compute-id': [0, 0],
             'migration-dest-compute-id': [0, 0],
             'compute-node-service-id': [0, 0]},
            compute_ep.run_for_host(self.ctx, ext_conf.CONF, 'nowhere'))
