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
"""Timing primitives shared by the benchmarks.

They time and summarise; they never judge. A benchmark reports numbers and
ratios, and does not fail because something was slow.
"""

import gc
import math
import statistics
import time


def time_gets(api, urls, repeat, warmup=2):
    """Time GET requests through a harness API client.

    :param urls: ``[(name, url)]``, requested in turn, so that drift in
        the machine's speed is spread evenly over them.
    :returns: ``{name: [seconds]}``, ``repeat`` samples each, after
        ``warmup`` unrecorded rounds.
    """
    samples = {name: [] for name, _ in urls}
    gc.collect()
    for n in range(warmup + repeat):
        for name, url in urls:
            started = time.perf_counter()
            api.api_get(url)
            took = time.perf_counter() - started
            if n >= warmup:
                samples[name].append(took)
    return samples


def time_calls(call, count, rounds, warmup=0, before_round=None):
    """Seconds taken by each of ``rounds`` rounds of ``count`` calls.

    :param before_round: called, untimed, before each round (to drop what
        the previous round left behind).
    """
    for _ in range(warmup):
        call()
    took = []
    for _ in range(rounds):
        if before_round:
            before_round()
        gc.collect()
        started = time.perf_counter()
        for _ in range(count):
            call()
        took.append(time.perf_counter() - started)
    return took


class GcClock(object):
    """Seconds spent in Python's garbage collector while installed.

    A collection runs inside whichever request happens to allocate past a
    threshold, whoever left the garbage; so the benchmarks report this
    beside their timings rather than let it pass for a path's own cost.
    """

    def __init__(self):
        self.seconds = 0.0
        self.collections = [0, 0, 0]
        self._started = None

    def _callback(self, phase, info):
        if phase == 'start':
            self._started = time.perf_counter()
        elif self._started is not None:
            self.seconds += time.perf_counter() - self._started
            self.collections[info['generation']] += 1
            self._started = None

    def __enter__(self):
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc):
        gc.callbacks.remove(self._callback)


def percentile(samples, fraction):
    """Nearest-rank percentile: a value that was measured."""
    ordered = sorted(samples)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def summary(samples, scale=1.0):
    """Median, p90, min and max of ``samples``, multiplied by ``scale``."""
    return {'median': statistics.median(samples) * scale,
            'p90': percentile(samples, 0.9) * scale,
            'min': min(samples) * scale,
            'max': max(samples) * scale,
            'n': len(samples)}
