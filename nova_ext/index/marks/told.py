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
marks, the ids of the notifications they were made from
(:func:`record`). Such a mark took its number after the notification was
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

import functools

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite as sqlite_dialect

from nova_ext.index import schema

#: How many numbers of the sequence an id is kept for (:func:`prune`).
#: Each batch of marks recorded (holds, releases, notifications) takes one: at
#: a hundred a second, a few minutes.
KEEP = 20000

#: The longest id kept; oslo.messaging's are uuids. Longer ones are not
#: recorded, and their instances are marked by the indexer too.
MAX_ID = 64

#: The statement that records ids on SQLite, outside any transaction
#: (``pending._mark_sqlite``), by the count of ids.
SQLITE_RECORD = ('INSERT OR IGNORE INTO nova_ext_index_told (message_id, '
                 'seq) VALUES %s')


def usable(message_ids):
    """The ids of ``message_ids`` that can be recorded, sorted, once each."""
    return sorted({i for i in message_ids
                   if isinstance(i, str) and 0 < len(i) <= MAX_ID})


def record(conn, message_ids, number):
    """Record ``message_ids`` as marked with ``number``.

    In ``conn``'s transaction: the one that commits their marks.
    """
    rows = [{'message_id': i, 'seq': number} for i in usable(message_ids)]
    if not rows:
        return
    statement = _insert(conn.dialect.name)
    if statement is not None:
        conn.execute(statement, rows)
        return
    c = schema.TOLD.c
    present = set(conn.execute(sa.select(c.message_id).where(
        c.message_id.in_([r['message_id'] for r in rows]))).scalars())
    rows = [r for r in rows if r['message_id'] not in present]
    if rows:
        conn.execute(sa.insert(schema.TOLD), rows)


@functools.lru_cache(maxsize=4)
def sqlite_record(count):
    """:data:`SQLITE_RECORD` for ``count`` ids."""
    return SQLITE_RECORD % ', '.join(['(?, ?)'] * count)


@functools.lru_cache(maxsize=None)
def _insert(dialect):
    """An INSERT that leaves an id already recorded as it is."""
    if dialect in ('postgresql', 'sqlite'):
        insert = (postgresql.insert if dialect == 'postgresql'
                  else sqlite_dialect.insert)
        return insert(schema.TOLD).on_conflict_do_nothing(
            index_elements=[schema.TOLD.c.message_id])
    if dialect == 'mysql':
        # Sets the row's number to itself: the row stays as it is.
        return mysql.insert(schema.TOLD).on_duplicate_key_update(
            seq=schema.TOLD.c.seq)
    return None


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
