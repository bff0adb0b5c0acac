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

from oslo_config import cfg

index_group = cfg.OptGroup(
    'nova_ext_index',
    title='nova_ext instance index options',
    help="""
Options for nova_ext's global instance index, the database behind the
``index`` instance list driver (``[nova_ext_instance_list]driver = index``).

The index holds a copy of every cell's instance rows, kept true by Nova's
versioned notifications and by periodic reconciliation, so that nova-api can
list servers across every cell with one query. It is a cache: it can be
dropped and rebuilt with ``nova-ext-manage index sync`` at any time.
""")

index_opts = [
    cfg.StrOpt(
        'connection',
        secret=True,
        help="""
SQLAlchemy URL of the index database.

Unset, the index is an SQLite file, ``nova_ext_index.sqlite`` in
``[DEFAULT]state_path``, which suits a single nova-api host. Deployments with
several nova-api hosts point every one of them at one MariaDB/MySQL
(``mysql+pymysql://...``) or PostgreSQL (``postgresql+psycopg2://...``)
database, typically on the database cluster they already run for Nova. Create
or upgrade its schema with ``nova-ext-manage index db_sync``.
"""),
    cfg.FloatOpt(
        'max_lag',
        default=30.0,
        min=0.0,
        help="""
How long, in seconds, a nova-api process may hold changes it could not
record in the index before it leaves the index off.

Compared, per nova-api process, with its unrecorded lag: the age, by that
process's own clock, of the oldest change it captured and could not record
in the index. Such changes wait in memory while the index cannot be
written; until they are recorded, that process answers its lists from
Nova's own path, and once the oldest is older than this value, it leaves
the index off for ``[nova_ext_instance_list]retry_interval``. Changes
recorded in the index (pending) do not count, however old: each list
request applies them before it reads the index (see ``catch_up_limit``).

It is also how long a Nova process with capture on waits, when it exits
(``nova-manage db archive_deleted_rows`` finishing) or once its service has
stopped (nova-conductor on SIGTERM), for the index to record the changes it
holds; past it, the process goes on and logs them as an error, and the next
reconcile pass heals the index. oslo.service ends a graceful stop that
takes longer than its ``graceful_shutdown_timeout`` at once: keep that
above this value.
"""),
    cfg.FloatOpt(
        'query_timeout',
        default=5.0,
        min=0.1,
        help="""
Seconds an index query may take before nova-api gives up on the index and
answers from Nova's own path.

It is also the time every cell database has to answer the trivial query
each list request makes of it first: a cell that does not answer in time
is down for that request, and Nova, which lists down cells its own way
(minimal records for their instances from microversion 2.69 on), answers
it. A cell holding changes the request applies first answers by its read
of them instead, in the same time. And it is the time a list request
waits for its process's own captured changes, where they wait in memory
for the next batch, to be recorded in the index, and the longest it (or an
index worker) waits for another process's turn to apply the pending
changes before it applies them itself.
"""),
    cfg.IntOpt(
        'deleted_retention',
        default=0,
        min=0,
        help="""
Days a deleted instance stays in the index as a tombstone; 0 keeps it until
Nova archives its row.

Tombstones are what make ``deleted=True``, ``changes-since`` and
``changes-before`` listings exact, and a tombstone always leaves the index
when Nova archives the instance (``nova-manage db archive_deleted_rows``;
the reconcile pass notices). A shorter retention keeps the index smaller
when Nova archives rarely; listings that could need a purged tombstone
(``deleted=True``, ``changes-before``, ``changes-since`` older than the
retention) are then answered by Nova's own path.
"""),
    cfg.IntOpt(
        'batch_size',
        default=200,
        min=1,
        help="""
How many instances the indexer reads from a cell database and writes to the
index in one transaction, for ``nova-ext-manage index sync``, reconciliation
and notification batches.
"""),
    cfg.IntOpt(
        'notification_batch_size',
        default=100,
        min=1,
        help="""
How many instance changes reported by notifications are recorded in the
index's pending table in one transaction.

``nova-ext-indexer`` takes up to this many messages from the bus at once,
records them in one transaction and only then acknowledges them (or
requeues them all if the transaction fails). The in-process consumer
(``[nova_ext_notifications]consumers = index``) buffers changes and
records them in one transaction once this many instances are buffered,
``notification_batch_timeout`` after the oldest change, or as soon as no
other notification is queued for it, whichever comes first.
"""),
    cfg.FloatOpt(
        'notification_batch_timeout',
        default=0.05,
        min=0.001,
        help="""
Seconds a notification may wait for others to share its transaction (see
``notification_batch_size``).

For ``nova-ext-indexer``, the longest a message waits for a batch to fill
up; for the in-process consumer, the longest a change waits while others
keep coming. Larger values record more changes per transaction (less CPU
per change), smaller ones make the index fresher.
"""),
    cfg.BoolOpt(
        'capture',
        default=False,
        help="""
Record, in this Nova process, every instance whose listed data a database
write changes, in the index's pending table, before the write returns.

Set it in every process that writes to Nova's databases: nova-api, the
super conductor and every cell conductor (which write for the computes),
and wherever ``nova-manage db archive_deleted_rows`` runs, together with
``nova_ext`` in ``[oslo_messaging_notifications]driver``, which is how
nova_ext is loaded there. A list request re-reads the marked instances
from their cells before it reads the index, so that a change is listed
from the moment the call that made it returns, including the changes Nova
makes without a notification (network info caches, faults, volume
attachments, archived servers). Notifications remain a second source, for
processes where it is not set.
"""),
    cfg.FloatOpt(
        'capture_timeout',
        default=0.25,
        min=0.0,
        help="""
Longest, in seconds, a Nova database write waits for its changes to be
recorded in the index (see ``capture``).

A write whose changes could not be recorded in time goes on; the changes
are kept in memory and retried, and until they are recorded this process
answers list requests from Nova's own path. No other process knows of them
meanwhile, so after its commit the write waits until the others have
stopped listing from the index by this process's last vouch (twice
``holder_heartbeat_interval`` after it), or until the changes are
recorded, whichever comes first. Later writes do not wait for the index
until a recording succeeds again, and wait after their commit for the same
moment, so an index that cannot be written slows Nova by at most this plus
twice ``holder_heartbeat_interval``, once. On MySQL and MariaDB, whose
lock waits count whole seconds, a write waits at most one second for
another writer's row or table lock.
"""),
    cfg.FloatOpt(
        'capture_release_delay',
        default=0.5,
        min=0.0,
        help="""
Longest, in seconds, that the end of a Nova transaction waits to be
recorded in the index (see ``capture``).

Until it is recorded, the instance's mark stays held, and list requests
re-read the instance from its cell. A transaction that changes the same
instance meanwhile (Nova makes several in a row while it builds or deletes
a server) keeps that mark instead of writing its own, so larger values
make fewer index writes on Nova's write path, smaller ones leave fewer
instances for list requests to re-read. Never shorter than
``notification_batch_timeout``.
"""),
    cfg.FloatOpt(
        'holder_heartbeat_interval',
        default=2.0,
        min=0.1,
        help="""
Seconds between two heartbeats of a process that holds marks (see
``capture``).

Each such process counts a number up in the index database at this
interval while it lives, so that the others can tell when it has died with
Nova transactions in flight (see ``holder_timeout``), and a second one
where it has recorded every change it learned of (its vouches), so that
they can tell it holds none they cannot know of. A nova-api process lists
from the index only while it has seen every other holder vouch in the last
two intervals (it reads the holders four times per interval, by its own
clock); a process that cannot record its changes stops vouching, and its
writes wait until those two intervals have passed (see
``capture_timeout``). Shorter intervals make that wait shorter, and the
first lists of a nova-api process, which go to Nova's path until it has
seen each holder vouch, fewer. One small write per holder, and four small
reads per nova-api process, per interval.
"""),
    cfg.FloatOpt(
        'holder_timeout',
        default=20.0,
        min=1.0,
        help="""
Seconds a process that holds marks may go without a heartbeat before the
others release its holds (see ``capture``).

Counted by each reader's own clock, from the moment it last saw the
holder's count change: no host's clock is compared with another's. The
released marks are re-read from the cells, so that lists show what the
dead process's transactions left. Set it well above
``holder_heartbeat_interval`` and above the longest a live process can
stall (a pause of the whole interpreter): the holds of a process taken for
dead stop protecting its transactions, and the process logs a warning when
it finds out. Until a dead holder is released, list requests go to Nova's
path (see ``holder_heartbeat_interval``); a reader counts only while it can
read the holders: after an outage of the index, the count starts again.
"""),
    cfg.IntOpt(
        'catch_up_limit',
        default=200,
        min=0,
        help="""
How many recorded changes a list request may re-read from the cells into
the index before it reads the index.

Compared with the changes pending: those recorded in the index's pending
table and not applied yet, whoever recorded them. The index answers a list
only once it holds every change recorded before the request. With more
changes than this pending, the request is answered from Nova's own path
instead (counted as ``unservable``), and the index worker catches up in the
background.
"""),
    cfg.IntOpt(
        'reconcile_interval',
        default=600,
        min=0,
        help="""
Seconds between two reconcile passes of ``nova-ext-indexer``; 0 turns them
off.

A pass is ``nova-ext-manage index verify --fix`` followed by ``index
purge``: it heals what notifications missed (notifications dropped before
they reached the bus, changes Nova makes without one) and removes instances
Nova has archived (``nova-manage db archive_deleted_rows``) and tombstones
older than ``deleted_retention``. Its cost is one streamed pass over every
instance row of every cell database, in batches of ``batch_size``, plus a
re-read of each instance that differs. When several indexers run, a lease
in the index database lets only one of them run each pass. Only indexers
that apply changes (not ``--no-worker``, nor ``--no-reconcile``) take part.
"""),
]


def register_opts(conf):
    conf.register_group(index_group)
    conf.register_opts(index_opts, group=index_group)


def list_opts():
    return {index_group: index_opts}
