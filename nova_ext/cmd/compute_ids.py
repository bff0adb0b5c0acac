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
"""``nova-ext-manage compute-ids audit [--format table|json]``.

A read-only report, per cell, of compute object id linkage:

- ``instances``: live instances whose ``compute_id`` names a compute node
  other than their ``host``/``node`` (or one that is gone);
- ``migrations``: live migrations whose ``dest_compute_id`` is not their
  ``dest_compute``/``dest_node``;
- ``compute_nodes``: live compute nodes whose ``service_id`` names a
  missing service or one on another host (the host was renamed);
- ``unlinked``: per migration, how many records are linkable now and the
  ones that cannot be linked, with the reason.

Every record listed is named by its row id, uuid, host and node (see
:data:`PLACES`).

Exit 0 when nothing disagrees and nothing linkable is left, else 1.
"""

import collections
import json
import sys

import sqlalchemy as sa

from nova_ext.compute_ids import migrations

#: Unlinkable records listed per migration and cell; the counts are full.
LIST_LIMIT = 100


#: The columns naming each record table's host and node, as the audit
#: shows them (a migration's are those of its destination).
PLACES = {'instances': ('host', 'node'),
          'migrations': ('dest_compute', 'dest_node'),
          'compute_nodes': ('host', 'hypervisor_hostname')}


def _links(conn, table, link):
    """Live records of ``table`` whose ``link`` disagrees with host/node.

    :param link: the name of the record's compute node id column.
    """
    cn = migrations._tables()[2]
    t = table.c
    host, node = (t[c] for c in PLACES[table.name])
    rows = conn.execute(
        sa.select(t.id, t.uuid, host.label('host'), node.label('node'),
                  t[link].label('link'),
                  cn.c.host.label('cn_host'),
                  cn.c.hypervisor_hostname.label('cn_node'),
                  cn.c.deleted.label('cn_deleted'))
        .select_from(table.outerjoin(cn, cn.c.id == t[link]))
        .where(t.deleted == 0, t[link].is_not(None),
               sa.or_(cn.c.id.is_(None), cn.c.deleted != 0,
                      node.is_(None),
                      cn.c.hypervisor_hostname != node,
                      cn.c.host != host))
        .order_by(t.id))
    return [_disagreement(r) for r in rows]


def _instances(conn):
    return _links(conn, migrations._tables()[0], 'compute_id')


def _migrations(conn):
    return _links(conn, migrations._tables()[1], 'dest_compute_id')


def _disagreement(row):
    if row.cn_host is None:
        why = 'compute node %s does not exist' % row.link
    elif row.cn_deleted:
        why = 'compute node %s is deleted' % row.link
    else:
        why = 'compute node %s is %s/%s' % (row.link, row.cn_host,
                                            row.cn_node)
    return {'id': row.id, 'uuid': row.uuid, 'host': row.host,
            'node': row.node, 'compute_id': row.link, 'reason': why}


def _compute_nodes(conn):
    _, _, cn, s = migrations._tables()
    rows = conn.execute(
        sa.select(cn.c.id, cn.c.uuid, cn.c.host, cn.c.hypervisor_hostname,
                  cn.c.service_id, s.c.host.label('service_host'),
                  s.c.deleted.label('service_deleted'))
        .select_from(cn.outerjoin(s, s.c.id == cn.c.service_id))
        .where(cn.c.deleted == 0, cn.c.service_id.is_not(None),
               sa.or_(s.c.id.is_(None), s.c.deleted != 0,
                      s.c.host != cn.c.host))
        .order_by(cn.c.id))
    out = []
    for r in rows:
        if r.service_host is None:
            why = 'service %s does not exist' % r.service_id
        elif r.service_deleted:
            why = 'service %s is deleted' % r.service_id
        else:
            why = 'service %s is on host %s (renamed?)' % (
                r.service_id, r.service_host)
        out.append({'id': r.id, 'uuid': r.uuid, 'host': r.host,
                    'node': r.hypervisor_hostname,
                    'service_id': r.service_id, 'reason': why})
    return out


def _identities(conn, table, ids):
    """``{id: {'uuid', 'host', 'node'}}`` of the records of ``table``."""
    if not ids:
        return {}
    host, node = PLACES[table.name]
    rows = conn.execute(
        sa.select(table.c.id, table.c.uuid, table.c[host].label('host'),
                  table.c[node].label('node'))
        .where(table.c.id.in_(ids)))
    return {r.id: {'uuid': r.uuid, 'host': r.host, 'node': r.node}
            for r in rows}


def _unlinked(conn):
    out = {}
    for linker in migrations.ALL:
        spec = migrations.spec(linker.name)
        records = migrations.unlinkable(conn, spec)
        reasons = collections.Counter(reason for _, _, reason in records)
        listed = records[:LIST_LIMIT]
        # The key is what the link is looked up by (a compute node's is
        # its host alone); the uuid and place say which record it is.
        known = _identities(conn, spec.record, [i for i, _, _ in listed])
        # A record archived between the two reads is still listed.
        gone = dict.fromkeys(('uuid', 'host', 'node'))
        out[linker.name] = {
            'linkable': migrations.remaining(conn, spec),
            'unlinkable': dict(sorted(reasons.items())),
            'records': [dict(known.get(i, gone), id=i, key=list(k), reason=why)
                        for i, k, why in listed],
        }
    return out


def audit(conn):
    """The report of one cell, read on its database connection."""
    return {'instances': _instances(conn),
            'migrations': _migrations(conn),
            'compute_nodes': _compute_nodes(conn),
            'unlinked': _unlinked(conn)}


def audit_cell(cctx):
    from nova.db.main import api as main_db

    with main_db.get_context_manager(cctx).reader.using(cctx) as session:
        return audit(session.connection())


def linkable_left(cctx):
    """``{migration name: linkable records}`` in one cell; cheap."""
    from nova.db.main import api as main_db

    with main_db.get_context_manager(cctx).reader.using(cctx) as session:
        conn = session.connection()
        return {linker.name: migrations.remaining(
            conn, migrations.spec(linker.name)) for linker in migrations.ALL}


def collect(ctx, cells=None):
    from nova import context as nova_context
    from nova import objects

    cells = cells if cells is not None else objects.CellMappingList.get_all(
        ctx)
    report = {}
    for cell in cells:
        with nova_context.target_cell(ctx, cell) as cctx:
            report[cell.name or cell.uuid] = audit_cell(cctx)
    return report


def needs_attention(report):
    return any(cell[k] for cell in report.values()
               for k in ('instances', 'migrations', 'compute_nodes')) or any(
        u['linkable'] for cell in report.values()
        for u in cell['unlinked'].values())


def run(ctx, conf, args, out=None):
    out = out or sys.stdout
    report = collect(ctx)
    if getattr(args, 'format', 'table') == 'json':
        print(json.dumps(report, indent=2, sort_keys=True), file=out)
    else:
        _print_tables(report, out)
    return 1 if needs_attention(report) else 0


def _print_tables(report, out):
    import prettytable

    table = prettytable.PrettyTable(
        ['Cell', 'Migration', 'Linkable', 'Unlinkable (reason: count)'])
    for cell, data in report.items():
        for name, u in data['unlinked'].items():
            table.add_row([cell, name, u['linkable'], ', '.join(
                '%s: %d' % kv for kv in u['unlinkable'].items()) or '-'])
    print(table, file=out)
    # Id is the record's row id: old migrations and compute nodes may have
    # no uuid, and the id is what SQL on the cell database finds it by.
    table = prettytable.PrettyTable(['Cell', 'Kind', 'Id', 'UUID', 'Host',
                                     'Node', 'Reason'])
    rows = []
    for cell, data in report.items():
        for kind in ('instances', 'migrations', 'compute_nodes'):
            rows += [(cell, kind, r) for r in data[kind]]
        for name, u in data['unlinked'].items():
            rows += [(cell, name, r) for r in u['records']]
    for cell, kind, r in rows:
        table.add_row([cell, kind, r['id']] + [
            '-' if r[k] is None else r[k] for k in ('uuid', 'host', 'node')
        ] + [r['reason']])
    print('Disagreements and unlinkable records:', file=out)
    print(table, file=out)
