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
"""Notifications whose marks their own process recorded.

oslo.messaging hands one notification, with one ``message_id``, to every
driver of the process that emits it: to the message bus
(``messagingv2``), and to nova_ext's in-process consumer. Where both
consumers run, each would mark the instance, and each mark takes a new
number of the sequence: a list that read the instance after the first
reads it again after the second, for the same change.

The in-process consumer records, in the transaction that commits its
marks, the ids of the notifications they were made from (``pending.mark``'s
``told``). Such a mark took its number after the notification was
emitted, so after the change it reports was committed: a read whose
ticket is at least that number sees the change, just as one after the
indexer's own mark would: the indexer adds nothing to what the in-process
consumer alone gives. ``nova-ext-indexer`` finds those ids
(``pending.mark_untold``) and does not mark their instances again. A
notification it finds no id of (the in-process consumer is not set there,
dropped it, or had not committed yet) it marks: an id missed makes one
read more, never one less.

Ids nobody takes (no indexer runs, or it ran late) are dropped after
:data:`KEEP` numbers of the sequence (:func:`prune`): an indexer that
comes to a notification later than that marks it again.
"""

import sqlalchemy as sa

from nova_ext.index import schema

#: How many numbers of the sequence an id is kept for (:func:`prune`).
#: Each batch of marks recorded (holds, releases, notifications) takes one: at
#: a hundred a second, a few minutes.
KEEP = 20000

#: The longest id kept; oslo.messaging's are uuids. Longer ones are not
#: recorded, and their instances are marked by the indexer too.
MAX_ID = 64


def usable(message_ids):
    """The ids of ``message_ids`` that can be recorded, sorted, once each."""
    return sorted({i for i in message_ids
                   if isinstance(i, str) and 0 < len(i) <= MAX_ID})


def found(conn, message_ids):
    """Of ``message_ids``, those recorded: their instances need no mark."""
    ids = usable(message_ids)
    if not ids:
        return set()
    c = schema.TOLD.c
    return set(conn.execute(sa.select(c.message_id).where(
        c.message_id.in_(ids))).scalars())


def forget(conn, message_ids):
    """Remove ``message_ids`` (found: each is handed over once)."""
    ids = usable(message_ids)
    if ids:
        conn.execute(sa.delete(schema.TOLD).where(
            schema.TOLD.c.message_id.in_(ids)))


def prune(conn, top):
    """Drop the ids recorded :data:`KEEP` numbers or more before ``top``.

    :returns: how many were dropped.
    """
    return conn.execute(sa.delete(schema.TOLD).where(
        schema.TOLD.c.seq < top - KEEP)).rowcount
