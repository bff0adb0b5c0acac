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
"""What the index takes from a versioned notification: which instance
changed, and when.

The payload itself is not indexed: it is a partial, versioned view of the
instance, and the index holds Nova's rows. A notification only says "this
instance changed at this time"; the indexer then reads the instance from its
cell. So every ``instance.*`` notification is enough, whatever its payload
version, and a missed field can never make the index wrong.
"""

import datetime
import time

#: The notifications that mean an instance changed.
EVENT_TYPES = ('instance.*',)


def instance_uuid(payload):
    """The instance uuid of a versioned instance payload, or None."""
    if not isinstance(payload, dict):
        return None
    data = payload.get('nova_object.data')
    if not isinstance(data, dict):
        return None
    uuid = data.get('uuid')
    return uuid if isinstance(uuid, str) else None


def event_time(timestamp, default=None):
    """Epoch seconds of an oslo.messaging notification timestamp.

    oslo.messaging writes ``str(utcnow())``, e.g. ``2026-11-22
    15:10:10.123456``, in UTC without a zone. Anything unreadable counts as
    ``default`` (now), which can only make the index look more behind.
    """
    try:
        when = datetime.datetime.fromisoformat(str(timestamp))
    except ValueError:
        return time.time() if default is None else default
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return when.timestamp()


def change(event_type, payload, timestamp):
    """``(uuid, epoch seconds)`` for an instance notification, else None."""
    if not event_type.startswith('instance.'):
        return None
    uuid = instance_uuid(payload)
    if uuid is None:
        return None
    return uuid, event_time(timestamp)
