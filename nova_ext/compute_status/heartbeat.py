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
"""Decides whether a compute has stopped reporting in, without flapping.

Nova's servicegroup API compares a service's last heartbeat, stamped with
the clock of the host that wrote it (the cell conductor's, for Nova's
``db`` driver), with the clock of the host that asks. Two hosts' clocks
order nothing: a watcher whose clock is behind by more than
``[DEFAULT]service_down_time`` sees a compute that stopped a minute ago as
up, and would take back the down trait that a watcher on time rightly set.

So with Nova's ``db`` driver, which counts every heartbeat in the
service's ``report_count``, a watcher judges by that counter alone, timed
on its own monotonic clock:

* up: the counter moved since the watcher's last look, and that look was
  less than ``service_down_time`` ago, so the compute reported in within
  it, whatever the timestamps say;
* down: the watcher has seen the counter stand still for
  ``service_down_time`` seconds, counted from the look that first showed
  its value (the latest its heartbeat can have been), whatever the
  timestamps say;
* not known yet (None), which leaves the down trait as it is: the first
  sighting of a service (a freshly started watcher changes no down trait
  before it has watched), a counter inside its window, and a counter that
  moved since a look longer ago than ``service_down_time`` (the watcher
  was paused, or a sweep was slow: the heartbeat may be that old).

A paused watcher, a slow database or a skewed clock then delays a
judgement but never reverses a right one. Nova's ``mc`` driver keeps
heartbeats in memcached and never counts them; there the servicegroup
API's answer is the only evidence, and a compute is down once it has said
down for a full window of the watcher's own.
"""

import time


class HeartbeatTracker(object):
    """Heartbeat status of nova-compute services, as one watcher sees it.

    :param servicegroup_api: ``nova.servicegroup.API``.
    :param down_time: seconds; ``[DEFAULT]service_down_time``.
    :param counted: whether ``report_count`` counts every heartbeat, as
        with Nova's ``db`` servicegroup driver.
    :param clock: seconds on a clock that only moves forward
        (``time.monotonic``); tests may give another.
    """

    def __init__(self, servicegroup_api, down_time, counted=True,
                 clock=None):
        self._sg = servicegroup_api
        self.down_time = down_time
        self.counted = counted
        self._clock = clock or time.monotonic
        #: service uuid -> (report_count, when it last showed life, when
        #: the watcher last looked)
        self._seen = {}

    def __call__(self, service):
        """True (up), False (down, confirmed) or None (not known yet).

        A forced-down service is watched like any other: the flag decides
        while it is set (the trait callbacks read it), and once cleared the
        counter has been followed all along.
        """
        now = self._clock()
        count, since, looked = self._seen.get(service.uuid,
                                              (None, None, None))
        if self.counted:
            if since is None or (count != service.report_count and
                                 now - looked > self.down_time):
                # Not seen before, or a heartbeat since a look too long
                # ago to date it: the window starts now.
                return self._life(service, now, None)
            if count != service.report_count:
                return self._life(service, now, True)
        elif self._sg.service_is_up(service):
            return self._life(service, now, True)
        elif since is None:
            return self._life(service, now, None)
        self._seen[service.uuid] = (count, since, now)
        return False if now - since >= self.down_time else None

    def _life(self, service, now, answer):
        """Start the window at ``now``; return ``answer``."""
        self._seen[service.uuid] = (service.report_count, now, now)
        return answer


def counted(conf):
    """Whether the servicegroup driver counts every heartbeat.

    Only Nova's ``db`` driver adds one to ``report_count`` at each.
    """
    return conf.servicegroup_driver == 'db'
