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
"""Compute object id linkage in the real cloud, by several processes.

One server in each cell loses its ``compute_id`` in its cell database, as
a record written before Nova set it, and the index is made to hold it so.
Then three processes link at once: two ``nova-ext-manage db
online_data_migrations`` started together, and the first cell's
nova-compute started again, which links its host's records at start
through its cell conductor (an RPC of nova_ext's remotable object); Nova's
own resource tracker may link one too, at its periodic update. Each record
ends up linked to its own compute node, none is counted done twice by
nova_ext's processes, ``nova-ext-manage compute-ids audit`` exits 0, and
``index verify`` finds the index holding every link: each process
captured its writes.
"""

import ast
import json
import re
import subprocess
import time

from nova_ext_tools.cloud import nova as cloud_nova
from nova_ext_tools.cloud import services
from nova_ext_tools.tests.deployment import base

LINK = 'instance-compute-id'
#: What Nova's resource tracker logs when it links an instance.
NOVA_LINKED = re.compile(r"Setting Instance\.compute_id=\d+ for (\S+)")
#: What the compute logs once it linked its host's records at start: the
#: pid of the process and its counts.
LINKED_AT_START = re.compile(
    r"^\S+ \S+ (\d+) INFO nova_ext\.seams\.compute .* nova_ext linked "
    r"the records of host \S+ at startup: (\{.*\})$", re.MULTILINE)


class TestComputeIds(base.CloudTestCase):

    def setUp(self):
        super().setUp()
        self.sql = self.cloud.db.sql
        self.cells = base.cells(self.cloud)
        compute = self.connect('admin').compute
        flavor = compute.find_flavor('tiny').id
        servers = [compute.create_server(
            name='ids-%s' % host, image_id=self.resources['image'],
            flavor_id=flavor, networks='none',
            availability_zone='nova:%s' % host)
            for _cell, host, _database in self.cells]
        for server in servers:
            self.addCleanup(compute.wait_for_delete, server)
            self.addCleanup(compute.delete_server, server)
        for server in servers:
            compute.wait_for_server(server)
        #: {uuid: its cell's database}
        self.servers = {server.id: database for server, (_c, _h, database)
                        in zip(servers, self.cells)}

    def _links(self):
        """{uuid: (its compute_id, the id of its host and node's node)}."""
        links = {}
        for uuid, database in self.servers.items():
            row = self.sql(
                "SELECT i.compute_id, n.id FROM instances i JOIN "
                "compute_nodes n ON n.host = i.host AND "
                "n.hypervisor_hostname = i.node AND n.deleted = 0 "
                "WHERE i.uuid = '%s'" % uuid, database).splitlines()[1]
            links[uuid] = tuple(row.split('\t'))
        return links

    def _audit(self):
        done = self.cloud.ext.command('nova-ext-manage', 'compute-ids',
                                      'audit', '--format', 'json',
                                      check=False)
        return done.returncode, {
            cell: report['unlinked'][LINK]['linkable']
            for cell, report in json.loads(done.stdout).items()}

    def _nothing_linkable(self):
        """The audit's answer when every cell is linked."""
        return 0, dict({cell: 0 for cell, _h, _d in self.cells}, cell0=0)

    def _migrations(self):
        argv = [services.venv_bin('nova-ext-manage'), '--config-file',
                self.cloud.nova.conf, 'db', 'online_data_migrations',
                '--format', 'json']
        return subprocess.Popen(argv, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def _linked_at_start(self, name, timeout=120):
        """The links the running compute ``name`` made at its start.

        Once it has made them: until then it may link any record.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid = str(self.cloud.ps.pid(name))
            for found in LINKED_AT_START.finditer(self.log_of(name)):
                if found.group(1) == pid:
                    return ast.literal_eval(found.group(2))
            time.sleep(1)
        self.fail('%s logged no links at start within %d s'
                  % (name, timeout))

    def _linked_by_nova(self, names, since):
        """Our records Nova's resource tracker linked after ``since``.

        It links the instances of its node at each periodic update, as
        one more process that writes the link (not compare-and-set).
        """
        found = set()
        for name in names:
            for uuid in NOVA_LINKED.findall(self.log_of(name)[since[name]:]):
                if uuid in self.servers:
                    found.add(uuid)
        return found

    def test_linked_once_by_processes_at_once(self):
        computes = [cloud_nova.compute_process(cell)
                    for cell, _h, _d in self.cells]
        for name in computes:
            self._linked_at_start(name)
        # Nova links the servers it builds; the audit finds nothing.
        linked = self._links()
        self.assertTrue(all(c == n for c, n in linked.values()), linked)
        self.assertEqual(self._nothing_linkable(), self._audit())
        since = {name: len(self.log_of(name)) for name in computes}
        for uuid, database in self.servers.items():
            self.sql("UPDATE instances SET compute_id = NULL WHERE uuid = "
                     "'%s'" % uuid, database)
        # The index reads them so, as it would records from before Nova
        # linked them: a change by hand in a cell database is not captured.
        self.cloud.ext.command('nova-ext-manage', 'index', 'verify', '--fix')
        name = computes[0]
        self.cloud.nova.restart(name)
        runs = [self._migrations() for _ in range(2)]
        done = 0
        for run in runs:
            out, err = run.communicate(timeout=300)
            self.assertEqual(0, run.returncode, out + err)
            report = json.loads(out)
            self.assertEqual([], report['errors'])
            done += sum(row['done'] for row in report['migrations']
                        if row['migration'] == LINK)
        at_start = self._linked_at_start(name)
        done += at_start[LINK][1]
        self.cloud.wait_for_computes()
        # No record counted twice by nova_ext's processes, and each
        # linked by one of them or by Nova's resource tracker.
        by_nova = self._linked_by_nova(computes, since)
        self.assertLessEqual(done, len(self.servers), at_start)
        self.assertGreaterEqual(done + len(by_nova), len(self.servers),
                                (at_start, by_nova))
        self.assertEqual(linked, self._links())
        self.assertEqual(self._nothing_linkable(), self._audit())
        # Every link was captured: the index holds what the cells hold.
        self.cloud.ext.command('nova-ext-manage', 'index', 'verify')
        self.assertEqual([], self.nova_ext_errors())
