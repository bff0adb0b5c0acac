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
"""The ``index`` notification consumer: keeps the index true in-process.

Enabled by listing ``index`` in ``[nova_ext_notifications]consumers`` of a
Nova process whose ``[oslo_messaging_notifications]driver`` includes
``nova_ext``. It records each instance change in the index's pending table
and wakes the index worker of this process. The in-process driver has no
acknowledgement to give and can drop notifications under overload (it
counts them); deployments that must not rely on that run
``nova-ext-indexer`` on the message bus, and the reconcile pass of either.
"""

import threading

from nova_ext import conf as ext_conf
from nova_ext.index import db
from nova_ext.index import events
from nova_ext.index import pending
from nova_ext.index import worker
from nova_ext.notifications import base

CONF = ext_conf.CONF

_LOCK = threading.Lock()
_WORKER = None


def get_worker(conf):
    """This process's index worker, started on first use."""
    global _WORKER
    with _LOCK:
        if _WORKER is None:
            _WORKER = worker.Worker(conf)
        return _WORKER


def reset():
    global _WORKER
    with _LOCK:
        if _WORKER is not None:
            _WORKER.stop()
        _WORKER = None


class IndexConsumer(base.Consumer):

    event_types = events.EVENT_TYPES

    def __init__(self, conf=None):
        self.conf = conf or CONF

    def consume(self, notification):
        change = events.change(notification.event_type,
                               notification.payload, notification.timestamp)
        if change is None:
            return
        pending.mark(db.get_engine(self.conf), [change])
        get_worker(self.conf).wake()
