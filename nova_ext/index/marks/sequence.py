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
"""The index's own order of changes and reads, set by no host's clock.

Nova stamps ``updated_at`` with the clock of whichever process writes, and
the hosts of a cloud do not agree on the time: a later change may carry an
earlier stamp. So the index orders what it learns by a sequence of its
own database instead:

- every mark of a change (``pending.mark``), recorded once the change is
  committed in its cell or while its transaction holds the mark, takes
  the next number;
- every read of a cell first takes a number of its own, the next one,
  committed before it reads, as its ticket (:func:`take`).

A read whose ticket is higher than the number of a mark began after that
mark was taken, so after the change it marks was committed (or it was
held, and then its release takes a higher number): that read sees the
change. The index keeps, for each instance, the read with the highest
ticket (``writer``), and the reader of a mark removes it only if it was
not renewed since it was taken (``pending.unmark``, by number): whatever
the clocks say, the last read written is one that saw every change
marked before it, and a change after it leaves a mark for another read.
And a list that looked at the sequence (:func:`current`, the highest
number committed) before it catches up need not read again an instance
the index holds from a read with a higher ticket (``pending.look``):
that number was not committed when the list looked, and the read began
after it was. A read's number is its own rather than the current one so
that the lists that looked while it waited for its turn find it higher
than theirs: with the current number, taken with no mark between, they
had the same, and each read the instance again after it.

On Galera, numbers follow the order in which one node gives them: write
to one node, as OpenStack deployments do.
"""

import sqlalchemy as sa

from nova_ext import direct_reads
from nova_ext.index import db
from nova_ext.index import schema


#: The statement that takes a number on SQLite, outside any transaction
#: (``pending._mark_sqlite``).
SQLITE_NEXT = 'INSERT INTO nova_ext_index_sequence DEFAULT VALUES'


def next_number(conn):
    """Take the next number, in ``conn``'s transaction."""
    return conn.execute(schema.SEQUENCE.insert()).inserted_primary_key[0]


def current(conn):
    """The highest number committed: a read's ticket; 0 before any."""
    return conn.execute(
        sa.select(sa.func.max(schema.SEQUENCE.c.id))).scalar() or 0


def take(engine):
    """A read's ticket: the next number, committed before it reads.

    In one round trip, on a connection of nova_ext's own
    (``direct_reads.inserted_id``); on SQLite, in a transaction that
    takes its write lock.
    """
    if engine.dialect.name == 'sqlite':
        return db.write(engine, next_number)
    return direct_reads.inserted_id(engine, schema.SEQUENCE)


def prune(conn):
    """Drop every number but the highest; how many were dropped."""
    top = current(conn)
    return conn.execute(sa.delete(schema.SEQUENCE).where(
        schema.SEQUENCE.c.id < top)).rowcount
