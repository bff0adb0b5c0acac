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
"""The compute status watcher: heartbeat loss and periodic reconcile.

One sweep reads the nova-compute services of every cell and applies the
trait callbacks to each one's root providers, with the heartbeat status of
:class:`~nova_ext.compute_status.heartbeat.HeartbeatTracker`. It is
level-triggered: it computes what placement must hold from the services
table and writes only the differences, so the first sweep is the start-up
reconcile and every later one repairs whatever a lost notification or a
failed write left behind.

Several watchers may run for availability without a leader: they compute
the same target from the same database, each write is a compare-and-set on
the provider generation, and none marks a compute down before seeing its
heartbeat counter stand still for a full ``service_down_time`` on its own
monotonic clock, so none undoes another's correct write, whatever the
hosts' clocks say.
"""

import time

from nova import servicegroup
from oslo_log import log as logging

from nova_ext.compute_status import engine as engine_mod
from nova_ext.compute_status import heartbeat
from nova_ext.service import periodic

LOG = logging.getLogger(__name__)

#: What a sweep counts (``TraitEngine.reconcile``), each 0 unless counted.
COUNTS = ('services', 'providers', 'written', 'missing', 'orphans')


class Watcher(object):
    """Sweeps every ``interval`` seconds until stopped.

    :param engine: a ``TraitEngine``.
    :param down_time: ``[DEFAULT]service_down_time``.
    :param counted: and ``clock``: for the heartbeat tracker (see
        HeartbeatTracker).
    """

    def __init__(self, engine, down_time, interval, counted=True,
                 clock=None, servicegroup_api=None):
        self.engine = engine
        self.interval = interval
        self.tracker = heartbeat.HeartbeatTracker(
            servicegroup_api or servicegroup.API(), down_time,
            counted=counted, clock=clock)
        self._periodic = None
        self.sweeps = self.failures = 0
        #: When the watcher started, and when its last sweep ended well
        #: (wall clock), and that sweep's counts.
        self.started_at = self.last_sweep_at = None
        self.last_stats = {}

    @classmethod
    def from_conf(cls, conf, **kwargs):
        engine = engine_mod.TraitEngine.from_conf(conf)
        kwargs.setdefault('counted', heartbeat.counted(conf))
        down_time = conf.service_down_time
        interval = conf.nova_ext_compute_status.watch_interval
        # A heartbeat counts as life only if the look before it was less
        # than service_down_time ago: sweeps further apart never see a
        # compute come back.
        longest = max(1, down_time // 2)
        if interval > longest:
            LOG.warning('[nova_ext_compute_status]watch_interval %d s is '
                        'more than half of [DEFAULT]service_down_time (%d '
                        's); sweeping every %d s', interval, down_time,
                        longest)
            interval = longest
        return cls(engine, down_time, interval, **kwargs)

    def sweep(self, ctxt=None):
        """One pass over every compute service; returns its counts.

        A dict with every name of :data:`COUNTS`, and any other the
        engine counted.
        """
        stats = dict(dict.fromkeys(COUNTS, 0),
                     **self.engine.reconcile(self.tracker, ctxt))
        self.sweeps += 1
        LOG.debug('nova_ext compute status sweep %d: %s', self.sweeps,
                  dict(stats))
        return stats

    def _sweep_safely(self):
        try:
            self.last_stats = dict(self.sweep())
            self.last_sweep_at = time.time()
        except Exception:
            # A database or placement outage must not end the watcher;
            # the next sweep starts again from the services table.
            self.failures += 1
            LOG.exception('nova_ext compute status sweep failed')

    def health(self):
        """``(healthy, details)``: a sweep ended well within 3 intervals.

        Or, before the first, the watcher started less than that ago.
        """
        now = time.time()
        bound = 3 * self.interval
        since = self.last_sweep_at or self.started_at
        details = {'sweeps': self.sweeps, 'failures': self.failures,
                   'last_sweep_age': (None if self.last_sweep_at is None
                                      else now - self.last_sweep_at)}
        return since is not None and now - since <= bound, details

    def start(self):
        """Sweep now, then ``interval`` seconds after each sweep ends."""
        LOG.info('nova_ext compute status watcher started; trait callbacks: '
                 '%s; every %d s', [n for n, _ in self.engine.callbacks],
                 self.interval)
        self.started_at = time.time()
        self._periodic = periodic.Periodic(
            self._sweep_safely, self.interval, 'nova-ext-status-watcher')
        self._periodic.start()

    def stop(self):
        """Stop; a sweep under way finishes first."""
        if self._periodic is not None:
            self._periodic.stop()
