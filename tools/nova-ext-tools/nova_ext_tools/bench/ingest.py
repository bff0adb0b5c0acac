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
"""``nova-ext-bench ingest``: how fast and how fresh the index stays.

One cloud is booted, given servers cloned in its cell databases (see
data.py), and the instance index (an SQLite file, its default) is synced.
A *change* is then what Nova does to an instance and tells the index about:
the instance's row is updated in its cell database (``updated_at`` and its
description), then an ``instance.update`` notification is handed to
nova_ext's notification dispatcher, as Nova's emitting threads do, which
delivers it to the index's in-process consumer; its batcher marks the
instance pending (``nova_ext.index.marks.pending.mark``), in batches; the index
worker re-reads marked instances from their cells and writes them to the
index (``nova_ext.index.apply.refresh.process_pending``). Measured:

* throughput, each step alone on one thread: marking (one committed
  transaction per notification, then batches of
  ``[nova_ext_index]notification_batch_size`` as the consumer and
  nova-ext-indexer commit them), and applying (``process_pending``
  batches); then all of it through the dispatcher, ``IndexConsumer`` and
  its ``Worker``, notifications per wall second and per CPU second of the
  process (per core);
* freshness: changes made at a steady offered rate while the worker runs;
  for each, the time from its notification to the commit of an index
  transaction holding it (from then on every reader of the index sees it).

The bench checks that every change did reach the index; one that did not is
reported loudly and makes the exit code 1. Timings never fail it.
"""

import collections
import functools
import gc
import resource
import statistics
import sys
import threading
import time
import uuid as uuid_lib

from nova import context as nova_context
from nova.db.main import api as main_db
from nova.db.main import models as main_models
from oslo_config import cfg
from oslo_utils import timeutils
import sqlalchemy as sa

from nova_ext import compat
from nova_ext.index.apply import refresh
from nova_ext.index.apply import writer
from nova_ext.index.feeds import consumer as index_consumer
from nova_ext.index.marks import pending
from nova_ext.index.marks import process
from nova_ext.index.repair import sync
from nova_ext.index import schema
from nova_ext.notifications import base as notifications_base
from nova_ext.notifications import dispatcher
from nova_ext.tests.functional import fixtures as ext_fixtures

from nova_ext_tools.bench import data
from nova_ext_tools.bench import measure
from nova_ext_tools.bench import report
from nova_ext_tools.demo import cloud

CONF = cfg.CONF

INSTANCES = main_models.Instance.__table__
#: Seconds to wait for the index to catch up after a phase before calling
#: the changes still missing lost.
CATCH_UP_TIMEOUT = 60.0

#: The project's targets for ingestion (see
#: doc/source/contributor/benchmarks.rst).
VISIBLE_WITHIN, VISIBLE_FRACTION = 1.0, 0.99
PER_CORE_TARGET = 500.0


def run(args):
    """Measure, print and save the results.

    :returns: 1 if the cloud failed or a change never reached the index,
        else 0.
    """
    results = {'benchmark': 'ingest', 'environment': _environment(args)}
    out = results['measured'] = {}
    print('\n== %d cells x %d servers: index ingestion ==' % (
        args.cells, args.per_cell))
    started = time.monotonic()
    # The consumer is enabled as an operator enables it; notifications are
    # handed to the process's dispatcher directly (no Nova service emits).
    errors = cloud.run(functools.partial(_measure, args, out),
                       cells=args.cells, seams=(),
                       options={'nova_ext_notifications':
                                {'consumers': ['index']}})
    out['cloud_seconds'] = round(time.monotonic() - started, 1)
    out['peak_rss_mib'] = resource.getrusage(
        resource.RUSAGE_SELF).ru_maxrss / 1024.0
    if errors:
        for _, error in errors:
            print('\n!!! The cloud failed:\n%s' % error)
        report.write_json(results, args.output)
        return 1
    results['targets'] = _targets(out)
    _show(results)
    report.write_json(results, args.output)
    print('results written to %s' % args.output)
    return 1 if out['lost'] or _not_recorded(out) else 0


def _not_recorded(out):
    return (sum(r['not_recorded'] for r in out['end_to_end']['samples']) +
            sum(f['not_recorded'] for f in out['freshness'].values()))


class _Cells(object):
    """Where each server lives, and Nova's side of a change to it."""

    def __init__(self, the_cloud, engine):
        ctxt = nova_context.get_admin_context()
        self.engines = {}
        for cell in the_cloud.cell_mappings.values():
            with nova_context.target_cell(ctxt, cell) as cctxt:
                self.engines[cell.uuid] = main_db.get_engine(context=cctxt)
        # The index knows every server's cell; cell0 holds none here.
        book = schema.INSTANCES.c
        with engine.connect() as conn:
            self.cell_of = {row.uuid: row.cell_uuid for row in conn.execute(
                sa.select(book.uuid, book.cell_uuid)
                .order_by(book.source_id, book.cell_uuid))}
        # Interleave the cells, so that consecutive changes hit all of them.
        by_cell = collections.defaultdict(list)
        for instance_uuid, cell_uuid in self.cell_of.items():
            by_cell[cell_uuid].append(instance_uuid)
        self.pool = [u for group in zip(*by_cell.values()) for u in group]

    def change(self, uuids, when, label):
        """Update the servers' rows as Nova would, one transaction a cell."""
        by_cell = collections.defaultdict(list)
        for instance_uuid in uuids:
            by_cell[self.cell_of[instance_uuid]].append(instance_uuid)
        for cell_uuid, cell_uuids in by_cell.items():
            with self.engines[cell_uuid].begin() as conn:
                conn.execute(sa.update(INSTANCES).where(
                    INSTANCES.c.uuid.in_(cell_uuids)).values(
                    updated_at=when, display_description=label))


def _notification(instance_uuid, when):
    return notifications_base.Notification(
        event_type='instance.update', publisher_id='nova-compute:bench',
        priority='INFO', timestamp=str(when),
        message_id=str(uuid_lib.uuid4()), context={},
        payload={'nova_object.name': 'InstanceUpdatePayload',
                 'nova_object.namespace': 'nova',
                 'nova_object.version': '2.0',
                 'nova_object.data': {'uuid': instance_uuid}})


class _Commits(object):
    """Records when each instance state was committed to the index.

    It wraps ``writer.apply_reads``, which commits before it returns; from
    then on every new reader of the index sees the rows written.
    """

    def __init__(self, apply):
        self._apply = apply
        self._lock = threading.Lock()
        self.seen = collections.defaultdict(list)

    def __call__(self, engine, reads):
        outcome = self._apply(engine, reads)
        now = time.time()
        rows = {}
        for read, _uuids in reads:
            rows.update(read.instances)
        with self._lock:
            for instance_uuid in outcome.written:
                self.seen[instance_uuid].append(
                    (rows[instance_uuid]['updated_at'], now))
        return outcome

    def visible_at(self, instance_uuid, updated_at):
        """When a state at least as new as ``updated_at`` was committed."""
        with self._lock:
            times = [t for held, t in self.seen.get(instance_uuid, ())
                     if held is not None and held >= updated_at]
        return min(times) if times else None


def _measure(args, out, the_cloud):
    progress = the_cloud.progress
    index = the_cloud.useFixture(ext_fixtures.IndexFixture(the_cloud))
    progress.step('creating %d servers (%d per cell) in the cell databases'
                  % (args.per_cell * args.cells, args.per_cell))
    out['data'] = data.populate(the_cloud, args.per_cell * args.cells)
    progress.step('syncing the index from the cell databases')
    ctx = nova_context.get_admin_context()
    for cell in sync.cells(ctx):
        sync.sync_cell(ctx, CONF, cell)
    cells = _Cells(the_cloud, index.engine)
    progress.done('%d instances' % len(cells.pool))
    commits = _Commits(writer.apply_reads)
    the_cloud.stub_out('nova_ext.index.apply.writer.apply_reads', commits)
    failures = out['failures'] = _Failures()
    the_cloud.stub_out('nova_ext.index.apply.refresh.process_pending',
                       failures.counting(refresh.process_pending))
    out['batch_size'] = CONF.nova_ext_index.batch_size
    out['notification_batch_size'] = (
        CONF.nova_ext_index.notification_batch_size)
    out['notification_batch_timeout'] = (
        CONF.nova_ext_index.notification_batch_timeout)
    out['lost'] = {}
    changes = min(args.changes, len(cells.pool))
    tag = iter(range(1, 1 << 30))

    progress.step('%d rounds of %d changes: mark alone, then apply alone'
                  % (args.rounds, changes))
    failures.phase = 'alone'
    rounds = []
    for n in range(args.rounds):
        uuids = cells.pool[:changes] if n % 2 == 0 else cells.pool[-changes:]
        rounds.append(_mark_then_apply(ctx, index.engine, cells, commits,
                                       uuids, next(tag)))
    out['separate'] = _summarise_rounds(rounds, changes)
    out['lost']['separate'] = sum(r['lost'] for r in rounds)
    progress.done()

    progress.step('%d rounds of %d notifications through IndexConsumer and '
                  'its worker' % (args.rounds, changes))
    consumer = _Feed(failures)
    the_cloud.addCleanup(dispatcher.reset)
    the_cloud.stub_out('nova_ext.index.feeds.consumer.IndexConsumer.consume',
                       consumer.consuming(
                           index_consumer.IndexConsumer.consume))
    rounds = []
    for n in range(args.rounds):
        uuids = cells.pool[:changes] if n % 2 == 0 else cells.pool[-changes:]
        rounds.append(_end_to_end(index.engine, cells, commits, consumer,
                                  uuids, next(tag)))
    out['end_to_end'] = _summarise_rounds(rounds, changes)
    out['lost']['end_to_end'] = sum(r['lost'] for r in rounds)
    progress.done()

    out['freshness'] = {}
    for rate in args.rates:
        progress.step('freshness: changes at %d/s for %.0f s, worker '
                      'running' % (rate, args.duration))
        fresh = out['freshness'][rate] = _freshness(
            index.engine, cells, commits, consumer, rate, args.duration,
            next(tag))
        out['lost']['freshness at %d/s' % rate] = fresh['lost']
        progress.done()
    out['lost'] = {k: v for k, v in out['lost'].items() if v}
    out['failures'] = failures.summary()
    # Mark transactions that failed; their changes were kept and retried.
    out['mark_retries'] = process.get_batcher(CONF).failures


class _Failures(object):
    """Exceptions of the consumer and of the worker, by phase and kind."""

    def __init__(self):
        self._lock = threading.Lock()
        self.phase = None
        self.counts = collections.Counter()
        self.examples = {}

    def add(self, kind, error):
        key = '%s, %s' % (self.phase, kind)
        with self._lock:
            self.counts[key] += 1
            self.examples.setdefault(key, '%s: %s' % (
                type(error).__name__, str(error).split('\n')[0]))

    def counting(self, process_pending):
        """``process_pending`` that counts what it raises to the worker."""
        def wrapper(*args, **kwargs):
            try:
                return process_pending(*args, **kwargs)
            except Exception as e:
                self.add('worker (retries after its retry delay)', e)
                raise
        return wrapper

    def summary(self):
        with self._lock:
            return {key: {'count': count, 'first': self.examples[key]}
                    for key, count in sorted(self.counts.items())}


class _Feed(object):
    """Hands notifications to the index's consumer as Nova's threads do.

    Through the process's nova_ext dispatcher, which delivers them to
    ``IndexConsumer`` on its own thread; a notification is *recorded* once
    the consumer has taken it without raising (the dispatcher logs and
    counts an exception of a consumer and goes on: the change it reported
    is not recorded, and the bench counts it).
    """

    def __init__(self, failures):
        self.dispatcher = dispatcher.get_dispatcher(CONF)
        self.failures = failures
        self._lock = threading.Lock()
        self._taken = set()

    def consuming(self, consume):
        """``IndexConsumer.consume`` that records what it took."""
        def wrapper(consumer, notification):
            try:
                consume(consumer, notification)
            except Exception as e:
                self.failures.add('notification not recorded (the consumer '
                                  'raised)', e)
                raise
            with self._lock:
                self._taken.add(notification.message_id)
        return wrapper

    def consume(self, notification):
        """Hand ``notification`` over; returns its message id."""
        self.dispatcher.submit(notification)
        return notification.message_id

    def recorded(self, message_ids):
        """Which of ``message_ids`` the consumer took, once it has them."""
        self.dispatcher.drain(CATCH_UP_TIMEOUT)
        with self._lock:
            return [m in self._taken for m in message_ids]


def _missing(commits, expected):
    """Changes ``[(uuid, updated_at)]`` the index has not committed."""
    return [(u, w) for u, w in expected if commits.visible_at(u, w) is None]


def _catch_up(engine, commits, expected):
    """Wait until every expected change is in the index.

    :returns: the number still missing at the deadline.
    """
    deadline = time.monotonic() + CATCH_UP_TIMEOUT
    missing = _missing(commits, expected)
    while missing and time.monotonic() < deadline:
        time.sleep(0.05)
        missing = _missing(commits, missing)
    while pending.count(engine) and time.monotonic() < deadline:
        time.sleep(0.05)
    return len(missing)


def _mark_then_apply(ctx, engine, cells, commits, uuids, tag):
    when = timeutils.utcnow()
    cells.change(uuids, when, 'bench change %d' % tag)
    gc.collect()
    # In batches, as the consumer and nova-ext-indexer mark them; applied
    # (untimed) before the marks are timed one transaction each.
    size = CONF.nova_ext_index.notification_batch_size
    wall, cpu = time.perf_counter(), time.thread_time()
    for start in range(0, len(uuids), size):
        pending.mark(engine, [(u, time.time())
                              for u in uuids[start:start + size]])
    batched = (time.perf_counter() - wall, time.thread_time() - cpu)
    while refresh.process_pending(ctx, CONF):
        pass
    # One transaction per notification.
    wall, cpu = time.perf_counter(), time.thread_time()
    for instance_uuid in uuids:
        pending.mark(engine, [(instance_uuid, time.time())])
    marked = (time.perf_counter() - wall, time.thread_time() - cpu)
    wall, cpu = time.perf_counter(), time.thread_time()
    while refresh.process_pending(ctx, CONF):
        pass
    applied = (time.perf_counter() - wall, time.thread_time() - cpu)
    lost = _catch_up(engine, commits, [(u, when) for u in uuids])
    return {'mark_wall': marked[0], 'mark_cpu': marked[1],
            'batched_mark_wall': batched[0], 'batched_mark_cpu': batched[1],
            'apply_wall': applied[0], 'apply_cpu': applied[1], 'lost': lost}


def _process_cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _end_to_end(engine, cells, commits, consumer, uuids, tag):
    when = timeutils.utcnow()
    cells.change(uuids, when, 'bench change %d' % tag)
    consumer.failures.phase = 'throughput'
    gc.collect()
    wall, cpu = time.perf_counter(), _process_cpu()
    sent = [consumer.consume(_notification(u, when)) for u in uuids]
    consumed = time.perf_counter() - wall
    # The dispatcher delivers in order and the batcher commits in order:
    # once the last change is in the index, every change before it is
    # marked, and what is pending is all that is left to apply.
    expected = [(u, when) for u in uuids]
    while (_missing(commits, expected[-1:]) or pending.count(engine)):
        if time.perf_counter() - wall > CATCH_UP_TIMEOUT:
            break
        time.sleep(0.005)
    took, used = time.perf_counter() - wall, _process_cpu() - cpu
    recorded = [u for u, taken in zip(uuids, consumer.recorded(sent))
                if taken]
    _catch_up(engine, commits, [(u, when) for u in recorded])
    lost = len(_missing(commits, [(u, when) for u in uuids]))
    return {'consume_wall': consumed, 'wall': took, 'cpu': used,
            'lost': lost, 'not_recorded': len(uuids) - len(recorded)}


def _summarise_rounds(rounds, changes):
    """Median per field, and rates in changes per second."""
    medians = {key: statistics.median(r[key] for r in rounds)
               for key in rounds[0] if key not in ('lost', 'not_recorded')}
    rates = {}
    for key, seconds in medians.items():
        name = key.replace('_wall', '').replace('_cpu', '')
        kind = 'per_cpu_second' if key.endswith('cpu') else 'per_second'
        if key in ('wall', 'cpu'):
            name, kind = 'total', ('per_cpu_second' if key == 'cpu'
                                   else 'per_second')
        rates.setdefault(name, {})[kind] = (changes / seconds
                                            if seconds else None)
    return {'changes': changes, 'rounds': len(rounds),
            'median_seconds': medians, 'rates': rates,
            'samples': rounds}


def _freshness(engine, cells, commits, consumer, rate, duration, tag):
    """Changes at ``rate`` per second for ``duration`` s; mark-to-visible."""
    total = max(1, int(rate * duration))
    made, sent = [], []
    consumer.failures.phase = 'freshness at %d/s' % rate
    gc.collect()
    started = time.monotonic()
    for k in range(total):
        # A steady schedule: a late change does not push the later ones.
        delay = started + k / float(rate) - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        instance_uuid = cells.pool[k % len(cells.pool)]
        when = timeutils.utcnow()
        cells.change([instance_uuid], when, 'bench change %d.%d' % (tag, k))
        marked = time.time()
        sent.append(consumer.consume(_notification(instance_uuid, when)))
        made.append((instance_uuid, when, marked))
    fed = time.monotonic() - started
    taken = consumer.recorded(sent)
    recorded = [(u, w) for (u, w, _m), ok in zip(made, taken) if ok]
    _catch_up(engine, commits, recorded)
    latencies, of_recorded = [], []
    recorded = set(recorded)
    for instance_uuid, when, marked in made:
        visible = commits.visible_at(instance_uuid, when)
        # An earlier mark of the same server may have carried this change
        # already; that is visible at once, not before the mark. A change
        # whose notification was not recorded counts when a later change
        # of the server carried it, or never.
        latency = (float('inf') if visible is None
                   else max(0.0, visible - marked))
        latencies.append(latency)
        if (instance_uuid, when) in recorded:
            of_recorded.append(latency)
    result = {'offered_per_second': rate, 'changes': total,
              'achieved_per_second': total / fed,
              'not_recorded': total - len(recorded),
              'lost': sum(1 for x in latencies if x == float('inf'))}
    result.update(_latencies(latencies))
    # What the index does with the notifications it did record: the
    # freshness it would have if none were lost.
    result['recorded'] = _latencies(of_recorded)
    return result


def _latencies(latencies):
    if not latencies:
        return {}
    seen = [x for x in latencies if x != float('inf')]
    return {
        # None: never visible (JSON has no infinity).
        'median_ms': _finite(statistics.median(latencies) * 1000.0),
        'p90_ms': _finite(measure.percentile(latencies, 0.90) * 1000.0),
        'p99_ms': _finite(measure.percentile(latencies, 0.99) * 1000.0),
        'max_ms': _finite(max(latencies) * 1000.0),
        'mean_ms': statistics.mean(seen) * 1000.0 if seen else None,
        'within_target': sum(1 for x in latencies if x <= VISIBLE_WITHIN)
        / float(len(latencies))}


def _targets(out):
    targets = []
    e2e = out['end_to_end']['rates']['total']['per_cpu_second']
    targets.append({
        'target': '>= %.0f notifications/s per core (IndexConsumer and '
                  'worker, per CPU second)' % PER_CORE_TARGET,
        'measured': e2e, 'met': e2e >= PER_CORE_TARGET})
    for rate, fresh in sorted(out['freshness'].items()):
        targets.append({
            'target': '%.0f%% of changes visible within %.0f s at %d/s '
                      'offered, share within' % (VISIBLE_FRACTION * 100,
                                                 VISIBLE_WITHIN, rate),
            'measured': fresh['within_target'],
            'met': fresh['within_target'] >= VISIBLE_FRACTION})
    return targets


def _show(results):
    env, out = results['environment'], results['measured']
    print('\n== nova-ext-bench ingest ==')
    for key in ('nova', 'python', 'cpus', 'cells', 'per_cell',
                'index_database'):
        print('%s: %s' % (key.replace('_', ' '), env[key]))
    print('index batch size: %d; notification batches: %d, or %.3f s'
          % (out['batch_size'], out['notification_batch_size'],
             out['notification_batch_timeout']))
    sep, e2e = out['separate'], out['end_to_end']
    print('\nthroughput, median of %d rounds of %d changes to distinct '
          'servers:' % (sep['rounds'], sep['changes']))
    rows = [
        ('mark alone (one transaction per notification)',
         sep['rates']['mark']['per_second'],
         sep['rates']['mark']['per_cpu_second']),
        ('mark alone (one transaction per %d)'
         % out['notification_batch_size'],
         sep['rates']['batched_mark']['per_second'],
         sep['rates']['batched_mark']['per_cpu_second']),
        ('apply alone (process_pending batches)',
         sep['rates']['apply']['per_second'],
         sep['rates']['apply']['per_cpu_second']),
        ('IndexConsumer + Worker, until all applied',
         e2e['rates']['total']['per_second'],
         e2e['rates']['total']['per_cpu_second']),
    ]
    report.table(('step', 'changes/s (wall)', 'changes/CPU-s'),
                 [(name, '%.0f' % wall, '%.0f' % cpu)
                  for name, wall, cpu in rows], sys.stdout)
    dropped = sum(r['not_recorded'] for r in e2e['samples'])
    if dropped:
        print('!!! through IndexConsumer, %d of %d notifications were not '
              'recorded (dropped by the dispatcher, or the consumer raised); '
              'see the exceptions below'
              % (dropped, e2e['changes'] * e2e['rounds']))
    print('mark transactions that failed and were retried: %d'
          % out['mark_retries'])
    print('\nfreshness, notification to committed in the index:')
    rows = []
    for rate, f in sorted(out['freshness'].items()):
        for label, stats in (('all', f), ('recorded', f['recorded'])):
            if stats:
                rows.append((
                    rate, '%.0f' % f['achieved_per_second'], f['changes'],
                    f['not_recorded'], label, _ms(stats['median_ms']),
                    _ms(stats['p90_ms']), _ms(stats['p99_ms']),
                    _ms(stats['max_ms']),
                    '%.2f%%' % (stats['within_target'] * 100)))
    report.table(('offered/s', 'achieved/s', 'changes', 'not recorded',
                  'of changes', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms',
                  'within %.0f s' % VISIBLE_WITHIN), rows, sys.stdout)
    print('(all: every change made; recorded: only those whose '
          'notification the consumer took)')
    print()
    for t in results['targets']:
        print('target: %s: %.2f, %s' % (t['target'], t['measured'],
                                        'met' if t['met'] else 'NOT met'))
    print('\ncloud %.0f s, peak RSS %.0f MiB'
          % (out['cloud_seconds'], out['peak_rss_mib']))
    if out['failures']:
        print('\n!!! EXCEPTIONS (as nova_ext would log them):')
        for key, failure in out['failures'].items():
            print('!!!   %s: %d, first: %s' % (key, failure['count'],
                                               failure['first']))
    if _not_recorded(out):
        print('!!! %d notifications were not recorded by the consumer'
              % _not_recorded(out))
    if out['lost']:
        print('!!! CHANGES THAT NEVER REACHED THE INDEX (within %.0f s of '
              'the end of their phase): %s' % (CATCH_UP_TIMEOUT, out['lost']))
    elif not out['failures']:
        print('every change reached the index.')


def _finite(value):
    return None if value == float('inf') else value


def _ms(value):
    return 'never' if value is None else '%.0f' % value


def _environment(args):
    return {
        'cells': args.cells,
        'per_cell': args.per_cell,
        'changes_per_round': args.changes,
        'rounds': args.rounds,
        'rates': args.rates,
        'duration_seconds': args.duration,
        'index_database': 'SQLite file (the default)',
        'nova': str(compat.nova_version()),
        'python': report.python_version(),
        'cpus': report.cpu_count(),
    }
