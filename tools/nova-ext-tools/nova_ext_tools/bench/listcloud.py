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
"""What ``nova-ext-bench list`` does in one cloud.

:func:`prepare` fills the cloud and syncs the index; then the benchmark
asks for each step in turn through :func:`handlers` (see clouds.py): the
index answers, one timed child of one path at a time, then Nova's answers
and timings, then the results.
"""

import collections
import functools
import gc
import os
import time

from nova import context as nova_context
from nova import objects
from nova import servicegroup
from nova.servicegroup.drivers import db as sg_db
from oslo_config import cfg

from nova_ext.index.repair import sync
from nova_ext.instance_list import serving
from nova_ext.seams import api as api_entry_point
from nova_ext.tests.functional import fixtures as ext_fixtures

from nova_ext_tools.bench import data
from nova_ext_tools.bench import isolate
from nova_ext_tools.bench import listanswers
from nova_ext_tools.bench import listchurn
from nova_ext_tools.bench import listquery
from nova_ext_tools.bench import listtime
from nova_ext_tools.bench import quiet

CONF = cfg.CONF
#: ``service_down_time`` in a timed child (see :func:`_heartbeats_held`).
HELD_DOWN_TIME = 86400
#: Seconds the computes of a resumed cloud may take to show up again: a
#: heartbeat comes every ``report_interval`` (10 s).
COMPUTES_UP_TIMEOUT = 120


class Cloud(object):
    """One benchmark cloud, filled and synced, and what it measured."""

    def __init__(self, args, cells, out, index, call):
        self.args = args
        self.cells = cells
        self.out = out
        self.index = index
        self.call = call
        #: The index paths' first answers, ``{(query name, path): (answer,
        #: served, ms)}``.
        self.got = {}
        #: Nova's answers made beside a path's own, in the state it
        #: answered in (the churn path), keyed as ``got``.
        self.wants = {}
        #: What the churn path's changes are undone to (listchurn.py).
        self.snapshot = None
        #: The timed children's results, ``{path: [result]}``.
        self.runs = {path: [] for path in listquery.INDEXED}
        self.usage = collections.Counter()


def prepare(args, cells, out, the_cloud):
    """Fill ``the_cloud`` with servers and sync the index from its cells.

    :returns: a :class:`Cloud`.
    """
    progress = the_cloud.progress
    out['response_validation'] = CONF.api.response_validation
    index = the_cloud.useFixture(ext_fixtures.IndexFixture(the_cloud))
    apis = {'admin': the_cloud.admin_api, 'project': the_cloud.api}
    for api in apis.values():
        api.microversion = 'latest'
    projects = (the_cloud.api.project_id,) + listquery.OTHER_PROJECTS

    progress.step('creating %d servers (%d per cell) in the cell databases'
                  % (args.per_cell * cells, args.per_cell))
    out['data'] = data.populate(the_cloud, args.per_cell * cells,
                                projects=projects)
    progress.step('syncing the index from the cell databases')
    started = time.monotonic()
    ctx = nova_context.get_admin_context()
    synced = collections.Counter()
    for cell in sync.cells(ctx):
        synced.update(sync.sync_cell(ctx, CONF, cell))
    out['sync'] = dict(synced, seconds=round(time.monotonic() - started, 1))
    progress.done('%d instances' % synced['written'])

    selector = serving.selector()
    if selector is None:
        raise RuntimeError('the index driver is not attached to nova-api; '
                           'nothing would be measured')
    out['answers'] = {q.name: {'url': q.url} for q in listquery.QUERIES}
    return Cloud(args, cells, out, index,
                 functools.partial(path_call, apis, selector))


def handlers(cloud):
    """The steps the benchmark asks a cloud process for, by name."""
    return {
        'answers': functools.partial(_first_answers, cloud),
        'time': functools.partial(_time_one_child, cloud),
        'stock': functools.partial(_stock_and_compare, cloud),
        'results': functools.partial(_results, cloud),
    }


def _first_answers(cloud):
    # Forked right after the cloud was built, its threads still busy
    # starting up: the fork hazard of quiet.settle (such a child can hang
    # at 32 cells).
    cloud.usage['settle'] += quiet.settle()
    # Before any churn child; the churn path answers last (INDEXED), so a
    # churn child that left a change could not reach the other answers.
    cloud.snapshot = listchurn.Snapshot(exclude=(
        cloud.out['data']['template'],))
    cloud.got, cloud.wants = listanswers.first_answers(
        listquery.QUERIES, listquery.INDEXED, cloud.call, {
            listquery.CHURN: functools.partial(listchurn.answers,
                                               snapshot=cloud.snapshot)})
    cloud.usage['churn_repaired'] += listchurn.settled(cloud.snapshot,
                                                       cloud.usage)
    _record_answers(cloud)


def _record_answers(cloud):
    for (name, path), (_, served, ms) in cloud.got.items():
        answer = cloud.out['answers'][name]
        answer['%s_first_ms' % path] = round(ms, 1)
        answer['served_' + path] = served
    gc.collect()
    cloud.out['live_objects'] = len(gc.get_objects())


def _time_one_child(cloud, path, others):
    """One timed child of ``path``; returns its wall-clock seconds.

    :param others: the other clouds' processes, which the child stops for
        its timed rounds together with this one. The child is forked once
        this process has settled after the last stop (:func:`quiet.settle`).
    """
    churn = path == listquery.CHURN
    # Untimed requests before the timed ones: the first answers were one.
    jobs, timeout = listtime.child_jobs(
        listquery.QUERIES, (path,), cloud.call, cloud.index.engine,
        listquery.WARMUP_REQUESTS - 1, cloud.args.repeat, listquery.LIMIT,
        cell_health=serving.selector().driver.cells,
        others=list(others) + [os.getpid()], in_child=_heartbeats_held,
        changes=functools.partial(listchurn.Churn, cloud.snapshot,
                                  cloud.call) if churn else None)
    cloud.usage['settle'] += quiet.settle()
    started = cloud.usage['wall']
    cloud.runs[path].append(isolate.call_again_if_stalled(
        '%d cells, %s' % (cloud.cells, path), jobs[path], timeout,
        cloud.usage, listtime.CHILD_STALL))
    if churn:
        cloud.usage['churn_repaired'] += listchurn.settled(cloud.snapshot,
                                                           cloud.usage)
    return cloud.usage['wall'] - started


def _heartbeats_held(down_time=HELD_DOWN_TIME):
    """In a timed child that stops its cloud: the computes count as up.

    The child stops its parent, whose computes write the heartbeats, for
    its timed rounds, and the parent may have been stopped for minutes
    before it (by the other clouds' children); a real nova-api's computes
    heartbeat on. Left as they are, the heartbeats age past half of
    ``service_down_time`` during the child (the index's kept services are
    then read again on every page, one query per cell: about 45 ms at 32
    cells) and past all of it (every host UNKNOWN), the more of a child's
    requests the later it is forked after a stop: a cost that grows with
    the cells and varies from child to child, which no deployment pays.
    Nova's servicegroup driver keeps the option's value from its start,
    hence the search.
    """
    CONF.set_override('service_down_time', down_time)
    for obj in gc.get_objects():
        if isinstance(obj, sg_db.DbDriver):
            obj.service_down_time = down_time


def _computes_up(timeout=None):
    """Wait until every compute's heartbeat shows it up, in this process.

    Called after this process was stopped (the other clouds' children
    stop it for minutes): Nova's answers, compared with the index's made
    while every compute was up, must be of the same state, not of
    heartbeats a few seconds from coming.

    :returns: seconds waited.
    """
    timeout = COMPUTES_UP_TIMEOUT if timeout is None else timeout
    ctx = nova_context.get_admin_context()
    group = servicegroup.API()
    started = time.monotonic()
    while True:
        down = sorted(
            service.host
            for services in nova_context.scatter_gather_skip_cell0(
                ctx, objects.ServiceList.get_by_binary,
                'nova-compute').values()
            if not nova_context.is_cell_failure_sentinel(services)
            for service in services if not group.service_is_up(service))
        waited = time.monotonic() - started
        if not down:
            return waited
        if waited > timeout:
            raise RuntimeError('computes still down after %.0f s: %s' % (
                waited, ', '.join(down)))
        time.sleep(1)


def timed_paths(args):
    """The index paths timed in forked children (``--paths``).

    Every index path still makes its first answers, compared with Nova's.
    """
    return tuple(args.paths)


def _stock_and_compare(cloud):
    """Nova's answers, compared, then Nova's path timed in this process.

    Asked for after every index child was forked: see listtime.py.
    """
    cloud.usage['computes_up'] += _computes_up()
    _compare_all(cloud)
    ms, _, gc_ms = listtime.in_process(
        listquery.QUERIES, (listquery.STOCK,), cloud.call,
        listquery.WARMUP_REQUESTS - 1, cloud.args.repeat)
    cloud.out['stock_ms'], cloud.out['stock_gc_ms'] = ms, gc_ms


def _results(cloud):
    out = cloud.out
    timed = timed_paths(cloud.args)
    (out['ms'], out['fallbacks'], out['gc_ms'], bare, out['per_process_ms']
     ) = listtime.pooled(listquery.QUERIES, timed, cloud.runs)
    out['children'] = dict(cloud.usage)
    out['bare_ms'], out['bare_rows'], out['bare_bytes'] = (
        bare['ms'], bare['rows'], bare['bytes'])
    out['bare_by_path_ms'] = bare['by_path']
    out['bare_per_process_ms'] = bare['per_process']
    out['cell_checks'] = listtime.cell_checks(timed, cloud.runs)
    out['alone'] = listtime.alone(timed, cloud.runs)
    out['churn'] = listchurn.summary(cloud.runs[listquery.CHURN])
    for name in out['ms']:
        out['ms'][name].update(out['stock_ms'][name])
        out['gc_ms'][name].update(out['stock_gc_ms'][name])
    del out['stock_ms'], out['stock_gc_ms']
    _fallbacks(cloud)
    return out


def _compare_all(cloud):
    out = cloud.out
    out['differences'] = {}
    for query in listquery.QUERIES:
        want = cloud.call(listquery.STOCK, query)[0]
        answer = out['answers'][query.name]
        answer.update(status=want.status_code, bytes=len(want.content),
                      servers=len(want.json().get('servers', ()))
                      if want.status_code == 200 else None)
        for path in listquery.INDEXED:
            key = (query.name, path)
            response, served, _ = cloud.got.pop(key)
            difference = _compare(response, served,
                                  want=cloud.wants.pop(key, want))
            if difference:
                out['differences']['%s (%s)' % (query.name, path)] = (
                    difference)
                print('\n!!! %d cells, %s (%s), %s: the index and Nova '
                      'answered differently: %s' % (
                          cloud.cells, query.name, query.url, path,
                          difference))


def _fallbacks(cloud):
    for name, count in sorted(cloud.out['fallbacks'].items()):
        if count:
            print('\n!!! %d cells, %s: %d timed index requests were '
                  'handed back to Nova, so its index timings are partly '
                  'stock timings (see the counters in the results)'
                  % (cloud.cells, name, count))
    # In forked children, their counters stayed in the children.
    cloud.out['selector'] = serving.selector().stats.snapshot()


def _request(api, url):
    return api.api_request(url.lstrip('/'), check_response_status=[])


def _stock(fn):
    """Call ``fn`` with Nova's own instance list in place of the index's."""
    with api_entry_point.stock_instance_list():
        return fn()


def path_call(apis, selector, path, query):
    """``(response, served as asked)`` of ``query`` through ``path``.

    Served as asked: by the index for INDEX, and rendered by nova_ext as
    well for the others (RENDERED); always True for STOCK. CHURN is
    CACHED here; its changes are made before (listchurn.py).
    """
    fn = functools.partial(_request, apis[query.who], query.url)
    if path == listquery.STOCK:
        return _stock(fn), True
    rendered = path in listquery.RENDERED
    counter = 'rendered' if rendered else 'served'
    before = selector.stats.snapshot()[counter]
    CONF.set_override('fast_render', rendered,
                      group='nova_ext_instance_list')
    CONF.set_override('render_cache_size',
                      listquery.CACHE_SIZE
                      if path in listquery.WITH_CACHE else 0,
                      group='nova_ext_instance_list')
    try:
        response = fn()
    finally:
        CONF.clear_override('fast_render', group='nova_ext_instance_list')
        CONF.clear_override('render_cache_size',
                            group='nova_ext_instance_list')
    return response, selector.stats.snapshot()[counter] == before + 1


def _compare(got, served, want):
    """What is wrong with the index answer, or None."""
    if not served:
        return 'not served by the index (handed to Nova), nothing compared'
    if got.status_code != want.status_code:
        return 'status %d from the index, %d from Nova: %s' % (
            got.status_code, want.status_code, got.text[:300])
    if want.status_code != 200:
        return 'Nova answered %d: %s' % (want.status_code, want.text[:300])
    if got.content == want.content:
        return None
    try:
        return ext_fixtures.first_difference(want.json(), got.json())
    except ValueError:
        return 'bodies differ (not JSON)'
