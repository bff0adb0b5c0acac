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
"""The notification consumer contract (``nova_ext.notifications.consumers``).

The ``nova_ext`` oslo.messaging notification driver, enabled in a Nova
process through ``[oslo_messaging_notifications]driver``, hands every
versioned notification that process emits to the consumers enabled in it.
"""

import abc
import dataclasses
import fnmatch

from nova_ext import plugins


@dataclasses.dataclass(frozen=True)
class Notification:
    """One versioned notification, as oslo.messaging hands it to drivers.

    :ivar event_type: e.g. ``instance.update``.
    :ivar publisher_id: e.g. ``nova-compute:host1``.
    :ivar priority: e.g. ``INFO``.
    :ivar payload: the serialized versioned object (a dict with
        ``nova_object.name``, ``nova_object.version`` and
        ``nova_object.data``).
    :ivar timestamp: when it was emitted, as oslo.messaging formats it.
    :ivar message_id: unique id of the notification.
    :ivar context: the serialized request context.
    """

    event_type: str
    publisher_id: str
    priority: str
    payload: dict
    timestamp: str
    message_id: str
    context: dict


class Consumer(plugins.Switched, abc.ABC):
    """Consumes the versioned notifications it subscribes to.

    A consumer is enabled when its ``enabled(conf)``
    (:class:`nova_ext.plugins.Switched`) says so, or when it is listed in
    ``[nova_ext_notifications]consumers``; the default is off.
    """

    #: fnmatch patterns of the event types to receive.
    event_types = ()

    def wants(self, event_type):
        return any(fnmatch.fnmatchcase(event_type, pattern)
                   for pattern in self.event_types)

    @abc.abstractmethod
    def consume(self, notification):
        """Handle one ``Notification``.

        Runs on the driver's worker thread, never on the thread that emitted
        the notification, one notification at a time in emission order. An
        exception is logged and counted and does not stop other consumers.
        """

    def stop(self):
        """Let go of any thread of the consumer's own.

        Called when the process's dispatcher stops (a configuration
        change, a test's end), after its last notification.
        """
