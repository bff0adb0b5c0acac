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
"""Service changes: one generation per host, moved on by notifications.

Nova notifies every change of a service that ``host_status`` reads but the
heartbeat: ``service.create``, ``service.delete`` and ``service.update``
(``disabled``, ``disabled_reason``, ``forced_down``). Whatever consumes the
index's notifications moves the host's generation on here, in the index
database that every nova-api process reads; a process keeps the services it
read from a cell only under the generation it read first
(``nova_ext.instance_list.services``).
"""

import functools

import sqlalchemy as sa

from nova_ext import direct_reads
from nova_ext.index import db
from nova_ext.index import schema

CHANGES = schema.SERVICE_CHANGES


#: The notifications that change what host_status reads.
EVENT_TYPES = ('service.create', 'service.update', 'service.delete')


def host(event_type, payload):
    """The host of a versioned service notification, else None."""
    if event_type not in EVENT_TYPES or not isinstance(payload, dict):
        return None
    data = payload.get('nova_object.data')
    if not isinstance(data, dict):
        return None
    name = data.get('host')
    return name if isinstance(name, str) and name else None


def bump(engine, hosts):
    """Move the generation of ``hosts`` on, in one transaction."""
    hosts = sorted(set(hosts))
    if not hosts:
        return
    db.write(engine, lambda conn: _bump(conn, hosts))


def _bump(conn, hosts):
    # Every call moves each host on by one: a host missing gets its row
    # first (a concurrent insert makes this transaction run again), then
    # all are updated, in host order as pending.mark, so that concurrent
    # bumps lock rows in the same order.
    known = set(conn.execute(sa.select(CHANGES.c.host).where(
        CHANGES.c.host.in_(hosts))).scalars())
    new = [{'host': name, 'generation': 0}
           for name in hosts if name not in known]
    if new:
        conn.execute(CHANGES.insert(), new)
    conn.execute(CHANGES.update().where(CHANGES.c.host.in_(hosts)).values(
        generation=CHANGES.c.generation + 1))


def generations(engine, hosts, rows):
    """``{host: generation}``; a host never changed is at 0.

    :param rows: ``rows(engine, statement, params)``, every row a
        statement reads (``nova_ext.direct_reads.rows``, one round trip).
    """
    hosts = sorted(set(hosts))
    found = dict.fromkeys(hosts, 0)
    if not hosts:
        return found
    size, params = direct_reads.padded(hosts, 'h')
    found.update(rows(engine, _generations_of(size), params))
    return found


@functools.lru_cache(maxsize=None)
def _generations_of(size):
    """The statement of the generations of ``size`` hosts, h0 to h<size-1>."""
    return sa.select(CHANGES.c.host, CHANGES.c.generation).where(
        direct_reads.in_list(CHANGES.c.host, size, 'h'))
