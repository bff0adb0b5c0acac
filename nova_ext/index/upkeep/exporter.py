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
"""The index's metrics, as Prometheus reads them.

What ``nova-ext-manage index status`` shows, read from the index database
at each scrape: whether nova-api lists from the index, its schema and
pending changes, the instances of each cell, the last reconcile pass, and
the list counters and unrecorded changes that every nova-api process
writes there (nova-api runs in a WSGI server that nova_ext does not
own, so its counters are exported here, cloud-wide, labelled by host and
process). ``doc/source/admin/metrics.rst`` lists every metric.
"""

from oslo_log import log as logging
from prometheus_client import core

from nova_ext.index.upkeep import status

LOG = logging.getLogger(__name__)

PREFIX = 'nova_ext_index_'


def _gauge(name, documentation, value=None, labels=()):
    return core.GaugeMetricFamily(PREFIX + name, documentation, value=value,
                                  labels=list(labels) or None)


def families(report):
    """The metric families of a report of ``status.collect``, or None."""
    if report is None:
        yield _gauge('up', 'Whether the index database could be read.', 0)
        return
    yield _gauge('up', 'Whether the index database could be read.', 1)
    yield _gauge('healthy', 'Whether nova-api lists from the index: its '
                 'schema at head, no more pending changes than '
                 'catch_up_limit, and no nova-api process reporting changes '
                 'it could not record.', int(bool(report['healthy'])))
    yield _gauge('schema_at_head', "Whether the index schema is at this "
                 "nova_ext's head revision.",
                 int(report['revision'] == report['head']))
    yield _gauge('pending_changes', 'Instances marked changed and not yet '
                 're-read from their cells.', report['pending'])
    yield _gauge('catch_up_limit', 'Pending changes beyond which list '
                 'requests are answered from Nova.', report['catch_up_limit'])
    yield _gauge('oldest_pending_age_seconds', 'Age of the oldest pending '
                 "change, by its writer's clock against the scraped host's; "
                 'informational, it decides nothing.',
                 report['oldest_pending_age'])
    instances = _gauge('instances', 'Instances the index holds, per cell.',
                       labels=('cell',))
    synced = _gauge('cell_synced_timestamp_seconds', 'When the last '
                    '"index sync" of the cell finished.', labels=('cell',))
    for cell in report['cells']:
        name = cell['name'] or cell['cell_uuid']
        instances.add_metric([name], cell['instances'])
        if cell['synced_at']:
            synced.add_metric([name], cell['synced_at'])
    yield instances
    yield synced
    yield from _reconcile(report.get('reconcile'))
    yield from _api(report['api'])
    yield from _holders(report.get('holders'))


def _reconcile(lease):
    last = (lease or {}).get('last_result')
    finished = _gauge('reconcile_last_finished_timestamp_seconds',
                      'When the last reconcile pass finished.')
    drift = _gauge('reconcile_last_drift', 'Instances the last reconcile '
                   'pass found different from their cells.')
    fixed = _gauge('reconcile_last_fixed', 'Instances the last reconcile '
                   'pass re-read.')
    failed = _gauge('reconcile_last_failed_cells', 'Cells the last '
                    'reconcile pass could not read.')
    if last:
        finished.add_metric([], lease['last_finished_at'])
        drift.add_metric([], last['drift'])
        fixed.add_metric([], last['fixed'])
        failed.add_metric([], len(last['failed']))
    return finished, drift, fixed, failed


def _api(rows):
    requests = core.CounterMetricFamily(
        PREFIX + 'api_list_requests', 'List requests of a nova-api '
        'process, by what answered them (see the "When Nova answers '
        'instead" table of the instance index guide).',
        labels=['host', 'pid', 'driver', 'outcome'])
    names = ('host', 'pid', 'driver')
    reported = _gauge('api_reported_timestamp_seconds', 'When a nova-api '
                      'process last wrote its counters to the index.',
                      labels=names)
    unrecorded = _gauge('api_unrecorded_changes', 'Changes a nova-api '
                        'process could not record in the index, at its '
                        'last report; while any, it answers its lists from '
                        'Nova.', labels=names)
    unrecorded_lag = _gauge('api_unrecorded_lag_seconds', 'Age of the '
                            'oldest of them, by that process\'s clock.',
                            labels=names)
    reasons = core.CounterMetricFamily(
        PREFIX + 'api_list_handed', 'List requests a nova-api process '
        'handed to Nova, by outcome and reason (numbers and uuids in the '
        'reason read N; past 20 reasons, "other").',
        labels=['host', 'pid', 'driver', 'outcome', 'reason'])
    holders_read = _gauge('api_holders_read', 'Whether a nova-api process '
                          'had read the holders of marks within its window '
                          'at its last report; while not, it answers its '
                          'lists from Nova.', labels=names)
    not_vouching = _gauge('api_holders_not_vouching', 'The other holders '
                          'of marks a nova-api process had not seen vouch '
                          'within its window at its last report; while '
                          'any, it answers its lists from Nova.',
                          labels=names)
    pages = core.CounterMetricFamily(
        PREFIX + 'api_page_cache_lookups', 'Lookups of a nova-api '
        'process\'s page cache, by outcome: kept, brought (up to date from '
        'the servers changed), listed (anew), missed. A detailed page '
        'looks up its rows and its volumes.',
        labels=['host', 'pid', 'driver', 'outcome'])
    for row in rows:
        labels = [row['host'], str(row['pid']), row['driver']]
        reported.add_metric(labels, row['updated_at'])
        for outcome, count in sorted((row.get('pages') or {}).items()):
            pages.add_metric(labels + [outcome], count)
        for outcome, count in sorted(row['counts'].items()):
            if isinstance(count, int):
                requests.add_metric(labels + [outcome], count)
        for outcome, kinds in sorted(row.get('reasons', {}).items()):
            for reason, count in sorted(kinds.items()):
                reasons.add_metric(labels + [outcome, reason], count)
        if row['unrecorded'] is not None:
            unrecorded.add_metric(labels, row['unrecorded'])
            unrecorded_lag.add_metric(labels, row['unrecorded_lag'])
        silent = row.get('silent')
        if silent is not None:
            read = silent['holders'] is not None
            holders_read.add_metric(labels, int(read))
            if read:
                not_vouching.add_metric(labels, len(silent['holders']))
    return (requests, reasons, pages, reported, unrecorded, unrecorded_lag,
            holders_read, not_vouching)


def _holders(rows):
    """The holders table's counts; none where it is not upgraded yet."""
    names = ['holder', 'host', 'pid']
    beats = core.CounterMetricFamily(
        PREFIX + 'holder_beats', 'Heartbeats of a process that holds '
        'marks, since it took its name.', labels=names)
    vouches = core.CounterMetricFamily(
        PREFIX + 'holder_vouches', 'Heartbeats on which that process '
        'vouched that it had recorded every change it learned of; beats '
        'that go on without them hold every nova-api\'s lists to Nova.',
        labels=names)
    for row in rows or ():
        labels = [row['holder'], row['host'], str(row['pid'])]
        beats.add_metric(labels, row['beats'])
        vouches.add_metric(labels, row['vouches'])
    return beats, vouches


def indexer_families(indexer):
    """The metric families of a running ``listener.Indexer``'s counters."""
    recorded = core.CounterMetricFamily(
        'nova_ext_indexer_changes_recorded', 'Instance changes this '
        'indexer recorded in the index from notifications.',
        value=indexer.endpoint.marked)
    told = core.CounterMetricFamily(
        'nova_ext_indexer_changes_told', 'Instance changes this indexer '
        'did not record: the process that sent their notifications had.',
        value=indexer.endpoint.told)
    services = core.CounterMetricFamily(
        'nova_ext_indexer_service_changes_recorded', 'Service changes this '
        'indexer recorded.', value=indexer.endpoint.services)
    requeued = core.CounterMetricFamily(
        'nova_ext_indexer_notifications_requeued', 'Notifications this '
        'indexer could not record and requeued.',
        value=indexer.endpoint.requeued)
    failing = core.GaugeMetricFamily(
        'nova_ext_indexer_record_failures_in_a_row', 'Batches in a row '
        'this indexer could not record (0: recording).',
        value=indexer.endpoint.failures)
    found = [recorded, told, services, requeued, failing]
    if indexer.worker is not None:
        found.append(core.CounterMetricFamily(
            'nova_ext_indexer_changes_applied', 'Changes this indexer\'s '
            'worker applied from the cells.', value=indexer.worker.applied))
        found.append(core.GaugeMetricFamily(
            'nova_ext_indexer_worker_alive', 'Whether the worker that '
            'applies changes runs.', value=int(indexer.worker.alive)))
    return found


def indexer_health(indexer, report):
    """``(healthy, details)`` of an indexer and the index it writes.

    Healthy while the index can be read, its schema is at head, the
    indexer records what it is told and its worker (if any) runs. Whether
    nova-api lists from the index, and why not, is in the details
    (``api_lists_from_index``, ``api_reasons``), not a failure of this
    indexer's.
    """
    details = {'index_readable': report is not None,
               'record_failures_in_a_row': indexer.endpoint.failures}
    healthy = report is not None and not details['record_failures_in_a_row']
    if report is not None:
        details.update(pending=report['pending'],
                       catch_up_limit=report['catch_up_limit'],
                       oldest_pending_age=report['oldest_pending_age'],
                       api_lists_from_index=report['healthy'],
                       api_reasons=report['reasons'],
                       schema_at_head=report['revision'] == report['head'])
        healthy = healthy and details['schema_at_head']
    if indexer.worker is not None:
        details['worker_alive'] = indexer.worker.alive
        healthy = healthy and details['worker_alive']
    return healthy, details


class IndexCollector(object):
    """A prometheus_client collector of the index's metrics.

    :param context: a callable returning the admin request context that
        reads the cell mappings.
    """

    def __init__(self, conf, context):
        self.conf = conf
        self.context = context

    def report(self):
        """``status.collect``'s report, or None: the index cannot be read."""
        try:
            return status.collect(self.context(), self.conf)
        except Exception as e:  # noqa: a scrape says so, and goes on
            LOG.warning('nova_ext index metrics: the index cannot be read '
                        '(%s: %s)', type(e).__name__, e)
            return None

    def collect(self):
        return families(self.report())

    def describe(self):
        # Registered without a first collect(): no database read at start.
        return []


class IndexerCollector(IndexCollector):
    """The index's metrics and a running indexer's own, with its health."""

    def __init__(self, conf, context, indexer):
        super().__init__(conf, context)
        self.indexer = indexer

    def collect(self):
        yield from families(self.report())
        yield from indexer_families(self.indexer)

    def health(self):
        return indexer_health(self.indexer, self.report())
