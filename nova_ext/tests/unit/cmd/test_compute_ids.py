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
"""nova-ext-manage compute-ids audit, on SQLite copies of Nova's tables."""

import io
from unittest import mock

import sqlalchemy as sa

from nova_ext.cmd import compute_ids as audit_cmd
from nova_ext.compute_ids import migrations as ci
from nova_ext.tests.unit.compute_ids import tables


def _table_rows(text, title):
    """The rows of the table printed after ``title``, as header dicts."""
    lines = text.split(title + '\n', 1)[1].splitlines()
    cells = [[c.strip() for c in line.strip('|').split('|')]
             for line in lines if line.startswith('|')]
    return [dict(zip(cells[0], row)) for row in cells[1:]]


class TestAudit(tables.LinkTestCase):
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
