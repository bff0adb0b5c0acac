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
"""``nova-ext-bench cloud --profile``: where one nova_ext request's time goes.

``nova-api-profiled`` is nova_ext's nova-api (its api-paste.ini, its 4
uwsgi workers) with a stack sampler first in its pipeline
(``nova_ext_tools.cloud.sampler``: py-spy samples a uwsgi worker's main
thread, where requests run, with an empty stack). One client sends the
query again and again; every 5 ms, the stack of the thread serving it is
recorded, waits included. Each sample is charged to the first component
of :data:`COMPONENTS` that its stack is in; the samples of a component
times the interval, over the requests sent, are its milliseconds per
request. The sampler's own cost is in every figure: read the shares.
"""

import glob
import json
import os
import shutil
import tempfile
import time

from nova_ext_tools.bench import cloudload
from nova_ext_tools.bench import report
from nova_ext_tools.cloud import layout
from nova_ext_tools.cloud import nova
from nova_ext_tools.cloud import novaext
from nova_ext_tools.cloud import sampler

#: (component, what a frame's ``function (file:line)`` contains): a stack
#: is charged to the component of its innermost frame that holds a marker
#: (the catch-up, not the index query that calls it); within a frame, the
#: first component listed.
COMPONENTS = (
    ('keystone token validation', ('keystonemiddleware/',)),
    # nova_ext asks Neutron on threads of its own; the request's thread
    # waits for their answers in security_groups.py.
    ('neutron: security groups of the page', (
        'nova/network/security_group_api.py', 'neutronclient/',
        'nova_ext/instance_list/render/security_groups.py')),
    ("catch-up: the cells' check, recorded changes", (
        'nova_ext/instance_list/catch_up.py',)),
    # Its EXISTS is asked in _any_build_request, whose frame is the
    # innermost of the lookup's.
    ('build requests lookup', ('check_build_requests',
                               '_any_build_request')),
    # The specs whose digest changed, read and loaded (and, where the
    # index holds no digest, the digests), for a detailed page and, from
    # 2.96, a list without details.
    ('request specs: digests, loaded', (
        'nova_ext/instance_list/render/request_specs.py',)),
    # A kept page and its bringing up to date; the index query it makes
    # for the changed servers is the index query's.
    ('page cache: kept pages', (
        'nova_ext/instance_list/page_cache.py',
        'nova_ext/instance_list/page_patch.py')),
    ('render cache and Nova\'s view', (
        'nova/api/openstack/compute/views/',
        'nova_ext/instance_list/render/view.py',
        'nova_ext/instance_list/render/render_cache.py')),
    ('index query (database)', (
        'nova_ext/instance_list/index.py', 'nova_ext/instance_list/base.py',
        'nova_ext/instance_list/serving.py')),
    ('serialize the body', ('ResponseObject.serialize', 'json/encoder.py',
                            'oslo_serialization/')),
    ('Nova\'s controller: validate the request', (
        'nova_ext/instance_list/render/controller.py',
        'nova_ext/seams/internals/schema_validator.py',
        'nova/api/openstack/compute/servers.py')),
    ('nova_ext: its filter, the page\'s other steps', (
        'nova_ext/api/', 'nova_ext/seams/api.py',
        'nova_ext/instance_list/handlers.py',
        'nova_ext/instance_list/render/')),
)
OTHER = 'pipeline: uwsgi, paste, webob, policy, the rest'
#: Seconds the profile waits at most for the machine to settle.
SETTLE_SECONDS = 300
#: Rounds of warm-up lists before the sampling, at most (:func:`warm`).
WARM_ROUNDS = 6
#: The sampler's interval, in ms (``sampler.filter_factory``).
INTERVAL_MS = 5.0
#: The share of the sampled requests, slowest first, broken down apart.
SLOWEST = 0.1
#: A frame every sample of a thread serving a request holds.
REQUEST_FRAME = 'urlmap.py'


def classify(stack):
    """The component a sampled stack (outermost frame first) goes to."""
    if not any(REQUEST_FRAME in frame for frame in stack):
        return None
    for frame in reversed(stack):
        for name, markers in COMPONENTS:
            if any(m in frame for m in markers):
                return name
    return OTHER


def parse(path):
    """``{component: samples}`` from py-spy's raw (collapsed) output."""
    counts = {}
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip('\n').rpartition(' ')
            if not stack:
                continue
            name = classify(stack.split(';'))
            if name is not None:
                counts[name] = counts.get(name, 0) + int(count)
    return counts


def slowest(paths, share=SLOWEST):
    """The slowest ``share`` of the sampled requests, by component.

    :param paths: the sampler's ``requests-<pid>.jsonl`` files, a request
        a line.
    :returns: ``{'requests', 'from_ms' (the fastest of them),
        'wall_ms_per_request', 'components': {name: ms per request}}``;
        None if no request was sampled.
    """
    sampled = []
    for path in paths:
        with open(path) as f:
            sampled += [json.loads(line) for line in f if line.strip()]
    if not sampled:
        return None
    sampled.sort(key=lambda r: r['ms'])
    slow = sampled[-max(1, int(len(sampled) * share)):]
    counts = {}
    for request in slow:
        for stack, n in request['stacks'].items():
            name = classify(stack.split(';'))
            if name is not None:
                counts[name] = counts.get(name, 0) + n
    return {
        'requests': len(slow),
        'from_ms': round(slow[0]['ms'], 1),
        'wall_ms_per_request': round(
            sum(r['ms'] for r in slow) / len(slow), 1),
        'components': {
            name: round(n * INTERVAL_MS / len(slow), 1)
            for name, n in sorted(counts.items(), key=lambda i: -i[1])}}


def settle(timeout=SETTLE_SECONDS):
    """Wait until the machine is no longer busy: the seconds waited.

    The timings before leave work behind (the writes' servers still
    stopping and starting, their changes applied, the profiled nova-api's
    workers starting), which the sampled requests would otherwise wait
    for: until the 1-minute load is under the number of CPUs, for
    ``timeout`` s at most.
    """
    started = time.monotonic()
    cpus = report.cpu_count() or 1
    while (os.getloadavg()[0] >= cpus and
           time.monotonic() - started < timeout):
        time.sleep(5)
    return round(time.monotonic() - started, 1)


def warm(cloud, target, url, rounds=WARM_ROUNDS):
    """Lists until a round asks Neutron no more: the rounds sent.

    Each worker's first page under the feed's proof asks Neutron once and
    keeps its answer, as nova_ext's nova-api has long done. uwsgi picks
    the worker of each request, so one round need not reach them all:
    rounds go on until the published ``groups_asked`` stays the same, at
    most ``rounds`` of them.
    """
    asked = cloud.ext.list_counters().get('groups_asked', 0)
    for sent in range(1, rounds + 1):
        cloudload.phase(target, url, layout.API_WORKERS, 2)
        time.sleep(novaext.PUBLISH_SECONDS)
        before, asked = asked, cloud.ext.list_counters().get(
            'groups_asked', 0)
        if asked == before:
            break
    return sent


def profile(cloud, target, url, seconds=30):
    """Break down ``target``'s requests for ``url`` through the sampler.

    :param target: a ``cloudload.Target`` of nova_ext's nova-api; its
        requests go to ``nova-api-profiled`` instead.
    """
    output = tempfile.mkdtemp(prefix='nova-ext-profile-')
    started = not cloud.ps.running(nova.PROFILED_API)
    if started:
        cloud.nova.start_profiled_api(output)
    try:
        profiled = cloudload.Target(
            'profiled', cloud.lay.url('nova_profiled', '/v2.1'),
            target.headers['X-Auth-Token'], {sampler.REQUEST_HEADER: '1'})
        unsampled = cloudload.Target(
            'profiled', profiled.endpoint, target.headers['X-Auth-Token'])
        # Each worker's first request, untimed and not sampled. It starts
        # the worker's reader of Neutron's feed, which proves nothing for
        # its first call timeout: until then each page asks Neutron.
        cloudload.phase(unsampled, url, layout.API_WORKERS, 1)
        time.sleep(novaext.FEED_CALL_TIMEOUT + 1)
        settled = settle()
        warm_rounds = warm(cloud, unsampled, url)
        latencies = []
        ends = time.monotonic() + seconds
        while time.monotonic() < ends:
            latencies += cloudload.phase(profiled, url, 1, 1)['latencies']
        counts = {}
        for path in glob.glob(os.path.join(output, 'stacks-*.txt')):
            for name, n in parse(path).items():
                counts[name] = counts.get(name, 0) + n
        slow = slowest(glob.glob(os.path.join(output, 'requests-*.jsonl')))
    finally:
        if started:
            cloud.ps.stop(nova.PROFILED_API)
        shutil.rmtree(output, ignore_errors=True)
    total = sum(counts.values()) or 1
    sent = len(latencies) or 1
    return {
        'settled': settled,
        'warm_rounds': warm_rounds,
        'load': report.load_average(),
        'requests': len(latencies),
        'p50_ms': cloudload.percentile([x * 1000 for x in latencies], 0.5),
        'sampled_ms_per_request': round(total * INTERVAL_MS / sent, 1),
        'components': {
            name: {'ms_per_request': round(n * INTERVAL_MS / sent, 1),
                   'share': round(n / total, 3)}
            for name, n in sorted(counts.items(), key=lambda i: -i[1])},
        'slowest': slow}
