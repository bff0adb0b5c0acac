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
"""What nova-api does with the index, for ``nova-ext-manage index status``.

Judged by the rules nova-api applies to each list request
(``nova_ext.index.upkeep.rules``), over what the index database shows: its
schema, its pending marks, and what each nova-api process last reported of
the changes it could not record. Whether a cell is down each request finds out
for itself: no report can tell.
"""

import time

from nova import objects
import sqlalchemy as sa

from nova_ext.index import db
from nova_ext.index.marks import pending
from nova_ext.index.repair import reconcile
from nova_ext.index import schema
from nova_ext.index.upkeep import metrics
from nova_ext.index.upkeep import migration
from nova_ext.index.upkeep import rules

#: Seconds within which a nova-api process's report decides the verdict.
#: A process reports after a list request, at most every ten seconds; one
#: that lists nothing has no choice to make, and the window is long beside
#: the seconds by which its host's clock and this one's may differ.
REPORTED_WITHIN = 60.0

LISTS = 'nova-api lists from the index'


def collect(ctx, conf, now=None):
    """A dict describing the index and what nova-api does with it.

    ``healthy`` is whether nova-api lists from the index; ``reasons`` says
    why not, one line per reason.
    """
    now = time.time() if now is None else now
    engine = db.get_engine(conf)
    report = {'connection': masked(db.connection_url(conf)),
              'revision': migration.current(conf),
              'head': migration.head(),
              'known': migration.revisions(),
              'pending': pending.count(engine),
              'catch_up_limit': conf.nova_ext_index.catch_up_limit,
              'oldest_pending_age': pending.oldest_age(engine, now=now),
              'max_lag': conf.nova_ext_index.max_lag}
    names = {c.uuid: c.name for c in objects.CellMappingList.get_all(ctx)}
    with engine.connect() as conn:
        counts = dict(conn.execute(sa.select(
            schema.INSTANCES.c.cell_uuid, sa.func.count()).group_by(
            schema.INSTANCES.c.cell_uuid)).all())
        cursors = {r.cell_uuid: r for r in conn.execute(sa.select(
            schema.SYNC_CURSORS))}
    report['cells'] = [
        {'cell_uuid': uuid, 'name': names.get(uuid),
         'instances': counts.get(uuid, 0),
         'synced_at': getattr(cursors.get(uuid), 'finished_at', None)}
        for uuid in sorted(set(names) | set(counts))]
    report['api'] = [api_process(row, report['max_lag'], now)
                     for row in metrics.collect(engine)]
    report['holders'] = _holders(engine)
    report['reconcile'] = _reconcile(engine)
    report['reconcile_interval'] = conf.nova_ext_index.reconcile_interval
    report['reasons'] = reasons(report)
    report['healthy'] = not report['reasons']
    return report


def api_process(row, max_lag, now):
    """A nova-api process's report, with what it does with the index.

    ``reported_ago`` compares its host's clock with this one's, and
    ``current`` whether that is within :data:`REPORTED_WITHIN`.
    ``answers_from_nova`` is why it hands its lists to Nova for the changes
    it could not record, or None.

    ``not_vouching`` is why it did for the holders of marks it had not
    seen vouch lately (``rules.silent``), or None: shown, not judged. A
    process sees every holder so for its first heartbeat interval and a
    half, and its report may catch that moment and stand for a minute.
    """
    reported_ago = max(0.0, now - row['updated_at'])
    why = None
    if row['unrecorded'] is not None:
        why = (rules.unrecorded_lag(row['unrecorded_lag'], max_lag) or
               rules.unrecorded(row['unrecorded']))
    silent = row.get('silent')
    return dict(row, reported_ago=reported_ago,
                current=reported_ago <= REPORTED_WITHIN,
                answers_from_nova=why,
                not_vouching=silent and rules.silent(silent['holders'],
                                                     silent['window']))


def reasons(report):
    """Why nova-api answers lists from Nova: ``[sentence]``, or empty."""
    found = []
    for why in (rules.schema(report['revision'], report['head'],
                             report.get('known')),
                rules.pending(report['pending'], report['catch_up_limit'])):
        if why:
            found.append('nova-api answers from Nova: %s' % why)
    for row in report['api']:
        if row['current'] and row['answers_from_nova']:
            found.append('nova-api on %s/%d answers from Nova: %s' % (
                row['host'], row['pid'], row['answers_from_nova']))
    return found


def _holders(engine):
    """The processes that hold marks, as the holders table shows them.

    None where the index is not upgraded yet (the revision line says so).
    """
    table = schema.HOLDERS
    inspector = sa.inspect(engine)
    if not inspector.has_table(table.name) or 'vouches' not in {
            c['name'] for c in inspector.get_columns(table.name)}:
        return None
    with engine.connect() as conn:
        return [dict(row._mapping) for row in conn.execute(sa.select(
            table.c.holder, table.c.host, table.c.pid, table.c.beats,
            table.c.vouches).order_by(table.c.host, table.c.pid))]


def _reconcile(engine):
    # An index not yet upgraded has no lease table; the revision line
    # already says so.
    if not sa.inspect(engine).has_table(schema.RECONCILE_LEASES.name):
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
    yield 'pending:         %d marks (catch_up_limit %d)%s' % (
        report['pending'], report['catch_up_limit'],
        ', the oldest recorded %.1f s ago by its writer\'s clock' % (
            report['oldest_pending_age']) if report['pending'] else '')
    yield ('max_lag:         %.1f s, for the changes a nova-api process '
           'could not record' % report['max_lag'])
    if report['healthy']:
        yield 'health:          OK: %s' % LISTS
    for why in report['reasons']:
        yield 'health:          NOT OK: %s' % why
    for cell in report['cells']:
        yield 'cell %-16s %8d instances, synced %s' % (
            cell['name'] or cell['cell_uuid'], cell['instances'],
            _age(cell['synced_at']))
    yield 'reconcile:       %s' % _reconcile_line(
        report.get('reconcile'), report.get('reconcile_interval'))
    for row in report['api']:
        yield _api_line(row)
        for outcome, kinds in sorted(row.get('reasons', {}).items()):
            for reason, count in sorted(kinds.items()):
                yield '    %s %d: %s' % (outcome, count, reason)
    for row in report.get('holders') or ():
        yield 'holder %s: %s/%d, %d beats, %d vouches' % (
            row['holder'], row['host'], row['pid'], row['beats'],
            row['vouches'])


def _api_line(row):
    counts = row['counts']
    line = 'nova-api %s/%d (%s, reported %.0f s ago): %s' % (
        row['host'], row['pid'], row['driver'], row['reported_ago'],
        ', '.join('%s %s' % (k, counts[k]) for k in sorted(counts)
                  if k != 'last_reason'))
    if row['unrecorded']:
        line += '; unrecorded %d, the oldest for %.1f s' % (
            row['unrecorded'], row['unrecorded_lag'])
    elif row['unrecorded'] is not None:
        line += '; unrecorded 0'
    if row.get('not_vouching'):
        line += '; %s' % row['not_vouching']
    if row.get('pages') is not None:
        line += '; pages %s' % ', '.join(
            '%s %s' % (k, row['pages'][k]) for k in sorted(row['pages']))
    return line


def _reconcile_line(lease, interval=None):
    last = (lease or {}).get('last_result')
    if not last:
        parts = ['no pass finished yet']
    else:
        parts = ['last pass %s by %s: drift %d, fixed %d%s' % (
            _age(lease['last_finished_at']), lease['last_holder'],
            last['drift'], last['fixed'],
            ', cells failed: %s' % ' '.join(last['failed'])
            if last['failed'] else '')]
    if not lease:
        return parts[0]
    # When the next pass is due is known to its timer's clock only.
    if lease['holder'] is not None and lease['holder_at']:
        parts.append('running on %s' % lease['holder_at'])
    elif lease['holder'] is not None or lease['timer'] is None:
        parts.append('due now')
    elif lease['timer_at']:
        parts.append('next %s after it, timed by %s' % (
            '%d s' % interval if interval else 'pass',
            lease['timer_at']))
    else:
        parts.append('due now (its timer is gone)')
    return '; '.join(parts)
