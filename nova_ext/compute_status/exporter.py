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
"""The status watcher's metrics, as Prometheus reads them.

``doc/source/admin/metrics.rst`` lists every metric.
"""

from prometheus_client import core

PREFIX = 'nova_ext_status_watcher_'


class WatcherCollector(object):
    """A prometheus_client collector of a running ``Watcher``."""

    def __init__(self, watcher):
        self.watcher = watcher

    def collect(self):
        watcher = self.watcher
        yield core.CounterMetricFamily(
            PREFIX + 'sweeps', 'Sweeps that ended well.',
            value=watcher.sweeps)
        yield core.CounterMetricFamily(
            PREFIX + 'sweep_failures', 'Sweeps that failed (a database or '
            'placement unreachable); the next one starts again.',
            value=watcher.failures)
        last = core.GaugeMetricFamily(
            PREFIX + 'last_sweep_timestamp_seconds', 'When the last sweep '
            'that ended well ended.')
        if watcher.last_sweep_at is not None:
            last.add_metric([], watcher.last_sweep_at)
        yield last
        counts = core.GaugeMetricFamily(
            PREFIX + 'last_sweep', 'What the last sweep counted: services, '
            'providers, written (trait changes it made), missing (providers '
            'placement no longer had), orphans (providers without a service).',
            labels=['count'])
        for name, value in sorted(watcher.last_stats.items()):
            counts.add_metric([name], value)
        yield counts

    def describe(self):
        return []

    def health(self):
        return self.watcher.health()
