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
"""The health of the index, for ``nova-ext-manage index status``."""

import time

from nova import objects
import sqlalchemy as sa

from nova_ext.index import db
from nova_ext.index import metrics
from nova_ext.index import migration
from nova_ext.index import pending
from nova_ext.index import reconcile
from nova_ext.index import sync
from nova_ext.index import writer


def collect(ctx, conf):
    """A dict describing the index; ``healthy`` says if nova-api uses it."""
    engine = db.get_engine(conf)
    report = {'connection': masked(db.connection_url(conf)),
              'revision': migration.current(conf),
              'head': migration.head()}
    report['lag'] = pending.lag(engine)
    report['pending'] = pending.count(engine)
    report['max_lag'] = conf.nova_ext_index.max_lag
    names = {c.uuid: c.name for c in objects.CellMappingList.get_all(ctx)}
    with engine.connect() as conn:
        counts = dict(conn.execute(sa.select(
            writer.BOOK.c.cell_uuid, sa.func.count()).group_by(
            writer.BOOK.c.cell_uuid)).all())
        cursors = {r.cell_uuid: r for r in conn.execute(sa.select(
            sync.CURSORS))}
    report['cells'] = [
        {'cell_uuid': uuid, 'name': names.get(uuid),
         'instances': counts.get(uuid, 0),
         'synced_at': getattr(cursors.get(uuid), 'finished_at', None)}
        for uuid in sorted(set(names) | set(counts))]
    report['api'] = metrics.collect(engine)
    report['reconcile'] = _reconcile(engine)
    report['healthy'] = (report['revision'] == report['head'] and
                         report['lag'] <= report['max_lag'])
    return report


def _reconcile(engine):
    # An index not yet upgraded has no lease table; the revision line
    # already says so.
    if not sa.inspect(engine).has_table(reconcile.LEASES.name):
        return None
    return reconcile.read(engine)


def masked(url):
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: never print a password because of a bad URL
        return '<unparsable>'


def _age(when):
    if not when:
        return 'never'
    return '%.0f s ago' % (time.time() - when)


def lines(report):
    yield 'index database:  %s' % report['connection']
    yield 'schema revision: %s (head %s)' % (report['revision'],
                                             report['head'])
    yield 'lag:             %.1f s (max_lag %.1f s), %d pending' % (
        report['lag'], report['max_lag'], report['pending'])
    yield 'health:          %s' % ('OK: nova-api lists from the index'
                                   if report['healthy'] else
                                   'NOT OK: nova-api answers from Nova')
    for cell in report['cells']:
        yield 'cell %-16s %8d instances, synced %s' % (
            cell['name'] or cell['cell_uuid'], cell['instances'],
            _age(cell['synced_at']))
    yield 'reconcile:       %s' % _reconcile_line(report.get('reconcile'))
    for row in report['api']:
        counts = row['counts']
        yield 'nova-api %s/%d (%s, %s): %s' % (
            row['host'], row['pid'], row['driver'], _age(row['updated_at']),
            ', '.join('%s %s' % (k, counts[k]) for k in sorted(counts)
                      if k != 'last_reason'))


def _reconcile_line(lease, now=None):
    now = time.time() if now is None else now
    last = (lease or {}).get('last_result')
    if not last:
        parts = ['no pass finished yet']
    else:
        parts = ['last pass %s by %s: drift %d, fixed %d%s' % (
            _age(lease['last_finished_at']), lease['last_holder'],
            last['drift'], last['fixed'],
            ', cells failed: %s' % ' '.join(last['failed'])
            if last['failed'] else '')]
    if lease and lease['holder'] and lease['expires_at'] > now:
        parts.append('running on %s' % lease['holder'])
    elif lease:
        parts.append('next due in %.0f s' % max(0, lease['due_at'] - now))
    return '; '.join(parts)
