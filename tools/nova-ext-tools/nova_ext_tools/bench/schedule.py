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
"""``nova-ext-bench schedule``: NoValidHost with down and disabled computes.

One cloud is booted (real placement, in-process). ``--nodes`` fake compute
node providers are added to placement, with the inventory and traits a
nova-compute reports. For each share of unusable computes (half disabled,
half down), the status traits are set as nova_ext's ``compute-status``
callback sets them, and the same scheduling requests are made in two ways,
side by side:

* stock Nova 34: the placement query Nova builds (its
  ``compute_status_filter`` forbids ``COMPUTE_STATUS_DISABLED``), at most
  ``--limit`` candidates (``[scheduler]max_placement_results``), then the
  ComputeFilter's verdict (disabled or down hosts rejected);
* nova_ext: the same, with ``compute-down`` also forbidding
  ``CUSTOM_COMPUTE_STATUS_DOWN``.

A request with no candidate left is a NoValidHost. Placement is asked to
randomize candidates, as a large cloud would, so the rate is a probability.
Time per request covers the placement query and the filtering; the rest of
the scheduler is the same in both and is not run.
"""

import gc
import json
import os
import random
import time
import uuid

from oslo_config import cfg

from nova_ext.compute_status import trait_callbacks

from nova_ext_tools.demo import cloud

DISABLED = trait_callbacks.COMPUTE_STATUS_DISABLED
DOWN = trait_callbacks.COMPUTE_STATUS_DOWN
RESOURCES = 'VCPU:1,MEMORY_MB:512,DISK_GB:1'
INVENTORY = {'VCPU': {'total': 64}, 'MEMORY_MB': {'total': 262144},
             'DISK_GB': {'total': 4096}}
SHARES = (0.0, 0.5, 0.8, 0.9, 0.95, 0.98)


def _randomize_placement():
    # The harness's placement has a configuration object of its own; find
    # it rather than patching placement's code.
    for obj in gc.get_objects():
        if isinstance(obj, cfg.ConfigOpts) and 'placement' in obj:
            try:
                obj.set_override('randomize_allocation_candidates', True,
                                 group='placement')
                return True
            except (cfg.NoSuchOptError, cfg.NoSuchGroupError):
                continue
    return False


def _add_nodes(placement, count):
    uuids = []
    placement.put('/traits/%s' % DOWN, None, version='1.6')
    for n in range(count):
        rp = str(uuid.uuid4())
        placement.post('/resource_providers',
                       {'name': 'bench-node-%04d' % n, 'uuid': rp},
                       version='1.20')
        placement.put('/resource_providers/%s/inventories' % rp,
                      {'resource_provider_generation': 0,
                       'inventories': INVENTORY}, version='1.20')
        placement.put('/resource_providers/%s/traits' % rp,
                      {'resource_provider_generation': 1,
                       'traits': ['COMPUTE_NODE']}, version='1.6')
        uuids.append(rp)
    return uuids


def _set_status(placement, uuids, share, rng):
    """Mark ``share`` of the nodes: half disabled, half down."""
    bad = rng.sample(uuids, int(round(share * len(uuids))))
    disabled = set(bad[:len(bad) // 2])
    down = set(bad[len(bad) // 2:])
    for rp in uuids:
        traits = ['COMPUTE_NODE']
        if rp in disabled:
            traits.append(DISABLED)
        if rp in down:
            traits.append(DOWN)
        gen = placement.get('/resource_providers/%s' % rp,
                            version='1.20').body['generation']
        placement.put('/resource_providers/%s/traits' % rp,
                      {'resource_provider_generation': gen,
                       'traits': traits}, version='1.6')
    return disabled, down


def _schedule(placement, forbidden, limit, unusable):
    url = ('/allocation_candidates?resources=%s&root_required=%s&limit=%d'
           % (RESOURCES, ','.join('!' + t for t in forbidden), limit))
    start = time.perf_counter()
    body = placement.get(url, version='1.36').body
    # The ComputeFilter: disabled and down hosts are rejected.
    hosts = [rp for rp in body['provider_summaries'] if rp not in unusable]
    return time.perf_counter() - start, bool(hosts)


def run(args):
    results = {'benchmark': 'schedule', 'nodes': args.nodes,
               'limit': args.limit, 'requests': args.requests, 'rows': []}
    rng = random.Random(args.seed)

    def body(c):
        results['randomized'] = _randomize_placement()
        uuids = _add_nodes(c.placement, args.nodes)
        print('%-8s %-22s %-22s' % ('unusable', 'stock NoValidHost / ms',
                                    'nova_ext NoValidHost / ms'))
        for share in SHARES:
            disabled, down = _set_status(c.placement, uuids, share, rng)
            unusable = disabled | down
            row = {'share': share}
            for name, forbidden in (('stock', [DISABLED]),
                                    ('nova_ext', [DISABLED, DOWN])):
                times, failed = [], 0
                for _ in range(args.requests):
                    elapsed, ok = _schedule(c.placement, forbidden,
                                            args.limit, unusable)
                    times.append(elapsed)
                    failed += not ok
                times.sort()
                row[name] = {'novalidhost_rate': failed / args.requests,
                             'ms_median': 1000 * times[len(times) // 2],
                             'ms_p95': 1000 * times[int(len(times) * .95)]}
            results['rows'].append(row)
            print('%-8s %-22s %-22s' % (
                '%d%%' % (100 * share),
                '%5.1f%% %7.1f' % (100 * row['stock']['novalidhost_rate'],
                                   row['stock']['ms_median']),
                '%5.1f%% %7.1f' % (100 * row['nova_ext']['novalidhost_rate'],
                                   row['nova_ext']['ms_median'])))

    errors = cloud.run(body, cells=1, computes_per_cell=1)
    for test_id, error in errors:
        print(error)
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    with open(args.output, 'w') as f:
        json.dump(results, f, indent=2)
    print('results: %s' % args.output)
    return 1 if errors else 0
