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

Nova's servicegroup API compares a service's last heartbeat, written with
the compute's clock, with this machine's clock. A skewed clock, a slow
database, or a watcher that was itself paused would make a healthy compute
look down for a sweep. So a watcher marks a compute down only when both
hold:

* the servicegroup API says it is down (the answer the ComputeFilter acts
  on), and
* the watcher has itself seen the service's ``report_count`` stand still
  for ``[DEFAULT]service_down_time`` seconds, measured on its own clock.

A service whose counter moves is up, whatever the timestamps say. A service
seen down for the first time is "unknown" (None) until the window passes:
a freshly started watcher changes no down trait before it has watched.
"""

from oslo_utils import timeutils


class HeartbeatTracker(object):
    """Heartbeat status of nova-compute services, as one watcher sees it.

    :param servicegroup_api: ``nova.servicegroup.API``.
    :param down_time: seconds; ``[DEFAULT]service_down_time``.
    :param clock: returns the current time as a datetime (oslo's
        ``timeutils.utcnow``, which tests may override).
    """

    def __init__(self, servicegroup_api, down_time, clock=None):
        self._sg = servicegroup_api
        self.down_time = down_time
        self._clock = clock or timeutils.utcnow
        #: service uuid -> (report_count, when the watcher first saw it)
        self._seen = {}

    def __call__(self, service):
        """True (up), False (down, confirmed) or None (not known yet)."""
        if service.forced_down:
            # The forced-down flag decides; the servicegroup API answers
            # False for it whatever the heartbeat. Forget the window so that
            # it starts afresh when the flag is cleared.
            self._seen.pop(service.uuid, None)
            return None
        now = self._clock()
        previous = self._seen.get(service.uuid)
        moved = previous is None or previous[0] != service.report_count
        if moved:
            self._seen[service.uuid] = (service.report_count, now)
        if self._sg.service_is_up(service):
            return True
        if moved:
            # A counter that moves is a live compute with a skewed clock;
            # a first sighting has no window yet.
            return None if previous is None else True
        waited = timeutils.delta_seconds(previous[1], now)
        return False if waited >= self.down_time else None


def servicegroup_up(servicegroup_api):
    """A heartbeat callable for one-shot syncs (notifications, the API).

    It only ever says "up" or "not known": marking a compute down needs a
    watcher's window.
    """
    def up(service):
        return True if servicegroup_api.service_is_up(service) else None
    return up
