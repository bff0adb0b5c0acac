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
"""How ``nova-ext-bench list`` times its paths.

Each index path, and the bare reference, is timed in children forked from
the cloud's process before Nova's path first runs there (see isolate.py),
several children each, one at a time (:func:`child_jobs`, their results
:func:`pooled`), after each path made its answers in a child of its own
(listanswers.py). Nova's own path is timed afterwards in the cloud's
process (:func:`in_process`).

Every request starts from a collected heap, collected outside its timing,
so that a full collection never lands in whichever request crosses the
threshold, charging one path for the garbage another left. Each request
still pays for the collections its own allocations trigger.
"""

import contextlib
import functools
import gc
import random
import sqlite3
import time

from nova import thread_pool_factory
from oslo_serialization import jsonutils
import sqlalchemy as sa

from nova_ext.index.apply import source

from nova_ext_tools.bench import isolate
from nova_ext_tools.bench import measure
from nova_ext_tools.bench import quiet

#: Seconds a forked job may take, plus this much per round it times.
CHILD_TIMEOUT, CHILD_TIMEOUT_PER_ROUND = 300, 300
#: Seconds a forked job may go without finishing a request (the slowest
#: take seconds) before it is taken for hung and forked again.
CHILD_STALL = 120
BARE = 'bare'


def rounds(queries, paths, call, warmup, repeat, before_timed=None,
           before_each=None):
    """Time every query through every path, ``warmup + repeat`` times.

    Each round makes every query through each path, in reverse order every
    other round, so that neither path always runs on the caches the other
    warmed, and drift in the machine's speed is shared evenly. The queries
    take a new order every round (the same in every run), so that no query
    always runs on the caches the one before it warmed.

    :param call: ``call(path, query) -> (response, served as asked)``.
    :param before_timed: called once, before the first timed round.
    :param before_each: ``before_each(path, query)``, called before each
        request, outside its timing and before the heap is collected.
    :returns: ``(samples, in_gc, fallbacks)``: seconds per request and
        seconds of it in the garbage collector, as ``{query: {path:
        [s]}}``, and ``{'query (path)': requests handed back to Nova}``.
    """
    samples = {q.name: {path: [] for path in paths} for q in queries}
    in_gc = {q.name: {path: [] for path in paths} for q in queries}
    fallbacks = {'%s (%s)' % (q.name, path): 0
                 for q in queries for path in paths}
    clock = measure.GcClock()
    shuffle = random.Random(0).shuffle
    queries = list(queries)
    for n in range(warmup + repeat):
        if n == warmup and before_timed is not None:
            before_timed()
        order = paths[::-1] if n % 2 == 0 else paths
        shuffle(queries)
        for query in queries:
            for path in order:
                if before_each is not None:
                    before_each(path, query)
                gc.collect()
                collected = clock.seconds
                started = time.perf_counter()
                with clock:
                    response, served = call(path, query)
                took = time.perf_counter() - started
                isolate.heartbeat()
                if response.status_code != 200:
                    raise RuntimeError('%s through %s answered %d: %s' % (
                        query.url, path, response.status_code,
                        response.text[:300]))
                if not served:
                    fallbacks['%s (%s)' % (query.name, path)] += 1
                if n >= warmup:
                    samples[query.name][path].append(took)
                    in_gc[query.name][path].append(clock.seconds - collected)
    return samples, in_gc, fallbacks


def summaries(by_query):
    """``{query: {path: summary in ms}}`` of ``{query: {path: [s]}}``."""
    return {name: {path: measure.summary(values, 1000.0)
                   for path, values in by_path.items()}
            for name, by_path in by_query.items()}


def in_process(queries, paths, call, warmup, repeat):
    """:func:`rounds` of every path in this process, summarised in ms."""
    samples, in_gc, fallbacks = rounds(queries, paths, call, warmup, repeat)
    return summaries(samples), fallbacks, summaries(in_gc)


def child_jobs(queries, paths, call, engine, warmup, repeat, limit,
               cell_health=None, others=None, in_child=None, changes=None):
    """The job of each path's timed children, paired with the bare reference.

    Each child makes ``warmup + 1`` untimed rounds of its one path, then
    ``repeat`` timed ones (see :func:`rounds`): one more than in this
    process, since a child writes the pages it shares with this process
    for the first time (a page fault and a copy each). Each request of a
    round is paired with a bare sample in the same child, taken just
    before or just after it (alternately), so that a path and the floor
    it is judged against share the process and the minutes they ran in:
    on a shared 2-core virtual machine the same work can take half as
    long again for seconds at a time.

    :param cell_health: the index's ``CellHealth``, or None; if given, each
        child counts the cell checks made in the path's requests
        (``checks`` and ``requests`` in its result).
    :param others: processes each child stops for its timed rounds
        (:class:`quiet.Quiet`; ``alone`` in its result says whether it
        could), or None to leave them running.
    :param in_child: called first in each child, if given.
    :param changes: if given, called in each child once it is a fresh
        process: an object whose ``before(path, query)`` is called before
        each request (outside its timing) and whose ``close()``, called
        after the rounds, returns what is kept as ``changes`` in the
        child's result (listchurn.Churn).
    :returns: ``({path: job}, seconds a child may take)``; each job is run
        in a child (:func:`isolate.call`), and their results, gathered per
        path, are what :func:`pooled` takes.
    """
    warmup += 1
    jobs = {path: functools.partial(_one_path, queries, path, call, engine,
                                    warmup, repeat, limit, cell_health,
                                    others, in_child, changes)
            for path in paths}
    return jobs, CHILD_TIMEOUT + CHILD_TIMEOUT_PER_ROUND * (warmup + repeat)


def pooled(queries, paths, runs):
    """The samples of every child, ``{path: [job result]}``, pooled.

    :returns: ``(ms, fallbacks, gc_ms, bare, per_process)``:

        * ``ms``, ``fallbacks``, ``gc_ms``: as from :func:`in_process`;
        * ``bare``: ``{'ms': summary of every child's bare samples,
          'rows': n, 'bytes': n of JSON, 'by_path': {path:
          summary of the bare samples of that path's children},
          'per_process': {path: [median ms in each of its children]}}``;
        * ``per_process``: ``{path: {query: [median ms in each child]}}``.
    """
    samples = {q.name: {p: [] for p in paths} for q in queries}
    in_gc = {q.name: {p: [] for p in paths} for q in queries}
    fallbacks = {'%s (%s)' % (q.name, p): 0 for q in queries for p in paths}
    per_process = {p: {q.name: [] for q in queries} for p in paths}
    bare_samples = {p: [] for p in paths}
    bare_per_process = {p: [] for p in paths}
    for path in paths:
        for run in runs[path]:
            for query in queries:
                took = run['samples'][query.name][path]
                samples[query.name][path].extend(took)
                in_gc[query.name][path].extend(run['in_gc'][query.name][path])
                per_process[path][query.name].append(
                    measure.summary(took, 1000.0)['median'])
            for key, count in run['fallbacks'].items():
                fallbacks[key] += count
            bare_samples[path].extend(run['bare'])
            bare_per_process[path].append(
                measure.summary(run['bare'], 1000.0)['median'])
    first = runs[paths[0]][0]
    bare_result = {
        'ms': measure.summary(
            [s for p in paths for s in bare_samples[p]], 1000.0),
        'rows': first['rows'], 'bytes': first['bytes'],
        'by_path': {p: measure.summary(bare_samples[p], 1000.0)
                    for p in paths},
        'per_process': bare_per_process}
    return (summaries(samples), fallbacks, summaries(in_gc), bare_result,
            per_process)


def cell_checks(paths, runs):
    """``{path: {'checks': n, 'requests': n}}`` over a path's children.

    Only paths whose children counted them (see :func:`child_jobs`).
    """
    counted = {}
    for path in paths:
        for run in runs.get(path, ()):
            if 'checks' in run:
                total = counted.setdefault(path, {'checks': 0, 'requests': 0})
                total['checks'] += run['checks']
                total['requests'] += run['requests']
    return counted


def alone(paths, runs):
    """``{path: [children that ran alone, children]}``.

    Only paths whose children were asked to stop the others (see
    :func:`child_jobs`).
    """
    counted = {}
    for path in paths:
        for run in runs.get(path, ()):
            if 'alone' in run:
                total = counted.setdefault(path, [0, 0])
                total[0] += bool(run['alone'])
                total[1] += 1
    return counted


#: In a forked child, its parent's SQLite handles, never to be freed.
_INHERITED = []


def fresh_process():
    """Make a forked child fit to serve: thread pools, SQL connections."""
    # Only the forking thread lives on in a child, so Nova's thread pools
    # would queue work for workers that are gone (a scatter-gather over the
    # cells would wait out its 60 s timeout). Nova resets them the same
    # way before it forks workers of its own.
    thread_pool_factory.reset_all_executors()
    # Nor may the child use the SQLite file connections (or server
    # sockets) its parent opened: every engine's pool forgets the parent's,
    # without closing them, and opens its own on first use. The harness
    # has engines of its own (API and cell databases) that nova_ext cannot
    # name, hence the search. An in-memory database lives in its one
    # connection, and is left alone.
    for obj in gc.get_objects():
        if isinstance(obj, (sqlite3.Connection, sqlite3.Cursor)):
            # Nor finalize them: freeing one enters SQLite's locks, which
            # a parent thread may have held at the fork, and then the
            # child's garbage collection waits for ever (seen at 32 cells).
            # The child leaves with os._exit, without freeing anything.
            _INHERITED.append(obj)
        elif isinstance(obj, sa.engine.Engine) and not _in_memory(obj.url):
            obj.dispose(close=False)


def _in_memory(url):
    return url.get_backend_name() == 'sqlite' and url.database in (
        None, '', ':memory:')


def _one_path(queries, path, call, engine, warmup, repeat, limit,
              cell_health=None, others=None, in_child=None, changes=None):
    fresh_process()
    if in_child is not None:
        in_child()
    changer = None if changes is None else changes()
    last = []
    made = [0]
    if cell_health is not None:
        checks = cell_health.checks

    def paired(which, query):
        if which == BARE:
            last[:] = [_Dumped(*_fetch_and_dump(engine, limit))]
            return last[0], True
        made[0] += 1
        return call(which, query)

    pause = None if others is None else quiet.Quiet(others, CHILD_STALL)
    try:
        with contextlib.ExitStack() as timed:
            samples, in_gc, fallbacks = rounds(
                queries, (path, BARE), paired, warmup, repeat,
                pause and functools.partial(timed.enter_context, pause),
                changer and changer.before)
            # Read while they are still stopped, if they were.
            alone = pause is not None and pause.stopped
    finally:
        # Even after a failure: what the changes leave, the children
        # forked after this one would read.
        changed = None if changer is None else changer.close()
    dumped = last[0]
    counted = {} if cell_health is None else {
        'checks': cell_health.checks - checks, 'requests': made[0]}
    if others is not None:
        counted['alone'] = alone
    if changed is not None:
        counted['changes'] = changed
    return dict(counted, **{
        'samples': {name: {path: by_path[path]}
                    for name, by_path in samples.items()},
        'in_gc': {name: {path: by_path[path]}
                  for name, by_path in in_gc.items()},
        'fallbacks': {key: count for key, count in fallbacks.items()
                      if not key.endswith('(%s)' % BARE)},
        # The same work whatever the query it was paired with.
        'bare': [s for by_path in samples.values() for s in by_path[BARE]],
        'rows': dumped.rows, 'bytes': len(dumped.content)})


class _Dumped(object):
    """A bare sample's result, as :func:`rounds` checks a response."""

    status_code = 200

    def __init__(self, rows, content):
        self.rows = rows
        self.content = content


def _fetch_and_dump(engine, limit):
    """Fetch ``limit`` stored instance rows from the index, dump as JSON.

    The rows are whole ``instances`` rows of Nova's schema (what the index
    stores), newest first as the default list order; the connection is
    opened each time, as a request would.

    :returns: ``(rows, JSON bytes)``.
    """
    table = source.INSTANCES
    query = sa.select(table).where(table.c.deleted == 0).order_by(
        table.c.created_at.desc(), table.c.uuid).limit(limit)
    with engine.connect() as conn:
        rows = [dict(row) for row in conn.execute(query).mappings()]
    return len(rows), jsonutils.dump_as_bytes({'servers': rows})
