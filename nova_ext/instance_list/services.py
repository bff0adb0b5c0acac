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
"""The services behind ``host_status``, for the pages of the index.

Nova joins each listed instance to its host's nova-compute services, in the
instance's cell, and its view computes ``host_status`` from them:
``forced_down`` (DOWN), else ``disabled`` (MAINTENANCE), else whether the
last heartbeat is within ``[DEFAULT]service_down_time`` (UP or UNKNOWN).
The index cannot hold them, as heartbeats are not notified; a page reads
them from its cells, one query per cell.

Each nova-api process keeps what it read (``[nova_ext_instance_list]
reuse_services``), and gives it to a later page only while the status it
gives is the one a fresh read would give:

* the flags change only with a ``service.*`` notification, and the index's
  consumers move the host's generation on for each one
  (``nova_ext.index.feeds.service_changes``); services are kept under the
  generation read before them, and read again once it moves;
* a heartbeat only ever moves forward, so services whose heartbeat shows
  the host up would show it up read again; services that show it down are
  read again, a heartbeat may have come since. Nova's view computes
  ``host_status`` later in the request, by its own clock, so kept services
  must still show the host up then: they are kept only while their
  heartbeat is at most half of ``service_down_time`` old (UP_MARGIN);
* nothing is kept longer than ``service_down_time``, which bounds what a
  lost notification can cost.
"""

import collections
import threading

from nova.db.main import api as main_db_api
from nova.db.main import models
from nova import objects
from nova.objects import base as obj_base
from oslo_db import exception as db_exc
from oslo_log import log as logging
from oslo_utils import timeutils
import sqlalchemy as sa

from nova_ext import conf as ext_conf
from nova_ext import direct_reads
from nova_ext.index import db
from nova_ext.index.feeds import service_changes
from nova_ext.instance_list import base
from nova_ext.seams.internals import cells as nova_cells

LOG = logging.getLogger(__name__)

CONF = ext_conf.CONF

#: Kept entries beyond which expired ones are dropped.
SWEEP_AT = 4096
#: The part of ``service_down_time`` a kept heartbeat may be old. The rest
#: is left to the request that renders the page: a heartbeat barely recent
#: enough when the page was planned could be too old when Nova's view
#: reads the clock, where a fresh read would have found a newer one (a
#: parity test saw UNKNOWN for Nova's UP on a loaded machine).
UP_MARGIN = 0.5

Kept = collections.namedtuple('Kept', 'generation read_at rows')


def _read(cctxt, hosts_by_uuid):
    # Plain rows on a connection rather than ORM objects in a session: this
    # runs once per cell on the page, and the session is most of its cost.
    table = models.Service.__table__
    engine = main_db_api.get_context_manager(cctxt).reader.get_engine()
    with engine.connect() as conn:
        return [dict(row._mapping) for row in conn.execute(
            sa.select(table).where(
                table.c.host.in_(sorted(hosts_by_uuid[cctxt.cell_uuid])),
                table.c.binary == 'nova-compute'))]


def read(ctx, hosts_by_cell):
    """The nova-compute services of some hosts, read from their cells now.

    One query per cell, the cells in parallel as Nova reads them.

    :param hosts_by_cell: ``{cell mapping id: set of host names}``.
    :returns: ``{(cell mapping id, host): [service rows as dicts]}``, as
        Nova's ``services`` join would give them; every host asked for has
        an entry.
    :raises Unservable: a cell did not answer; its host_status is unknown.
    """
    by_host = {(cell_id, host): [] for cell_id, hosts in
               hosts_by_cell.items() for host in hosts}
    if not hosts_by_cell:
        return by_host
    cells = [cell for cell in nova_cells.all_cells()
             if cell.id in hosts_by_cell]
    id_of = {cell.uuid: cell.id for cell in cells}
    results = nova_cells.scatter(
        ctx, cells, _read,
        {cell.uuid: hosts_by_cell[cell.id] for cell in cells})
    for cell_uuid, result in sorted(results.items()):
        failure = nova_cells.failure(result)
        if failure is not None:
            raise base.Unservable('cell %s did not give the services of '
                                  'its hosts: %s' % (cell_uuid, failure))
        for service in result:
            by_host[(id_of[cell_uuid], service['host'])].append(service)
    return by_host


def still_true(kept, generation, now, down_time):
    """Whether ``kept`` gives the host_status a fresh read would give now.

    :param kept: a :class:`Kept`.
    :param generation: the host's generation now.
    """
    if kept.generation != generation:
        return False
    if not 0 <= (now - kept.read_at).total_seconds() <= down_time:
        return False
    for row in kept.rows:
        if row['forced_down'] or row['disabled']:
            # DOWN or MAINTENANCE whatever the heartbeat says.
            continue
        # As nova.servicegroup.drivers.db.is_up, with the rest of the
        # request left in hand.
        last = row['last_seen_up'] or row['created_at']
        if not 0 <= (now - last).total_seconds() <= down_time * UP_MARGIN:
            return False
    return True


class Services(object):
    """The services of the hosts of index pages, kept per process."""

    def __init__(self, conf=None):
        self.conf = conf or CONF
        self._kept = {}
        self._lock = threading.Lock()
        #: Hosts given kept services, and hosts read from their cells.
        self.counts = collections.Counter()

    def _reusing(self):
        return (self.conf.nova_ext_instance_list.reuse_services and
                self.conf.servicegroup_driver == 'db')

    def by_host(self, ctx, hosts_by_cell):
        """As :func:`read`, with what is still true taken from the kept."""
        if not self._reusing():
            self.counts['read'] += sum(map(len, hosts_by_cell.values()))
            return read(ctx, hosts_by_cell)
        names = {host for hosts in hosts_by_cell.values() for host in hosts}
        try:
            generation = service_changes.generations(
                db.get_engine(self.conf), names, direct_reads.rows)
        except (sa.exc.SQLAlchemyError, db_exc.DBError) as e:
            LOG.debug('Reading every service again, the service changes '
                      'are not readable: %s', e)
            generation = None
        now = timeutils.utcnow()
        down_time = self.conf.service_down_time
        found, missing = {}, collections.defaultdict(set)
        for cell_id, hosts in hosts_by_cell.items():
            for host in hosts:
                kept = self._kept.get((cell_id, host))
                if (generation is not None and kept is not None and
                        still_true(kept, generation[host], now, down_time)):
                    found[(cell_id, host)] = kept.rows
                else:
                    missing[cell_id].add(host)
        self.counts['kept'] += len(found)
        self.counts['read'] += sum(map(len, missing.values()))
        fresh = read(ctx, missing)
        found.update(fresh)
        if generation is not None:
            self._keep(fresh, generation, now, down_time)
        return found

    def _keep(self, fresh, generation, read_at, down_time):
        with self._lock:
            for (cell_id, host), rows in fresh.items():
                self._kept[(cell_id, host)] = Kept(generation[host], read_at,
                                                   rows)
            if len(self._kept) > SWEEP_AT:
                self._kept = {
                    key: kept for key, kept in self._kept.items()
                    if (read_at - kept.read_at).total_seconds() <= down_time}

    def fill(self, ctx, instances, cell_of):
        """Give each instance its host's services, as Nova's join does.

        Nova joins them to live instances only.

        :param cell_of: a function of an instance, its cell mapping id.
        """
        keys = [base.joined_services(inst, cell_of) for inst in instances]
        hosts = collections.defaultdict(set)
        for key in filter(None, keys):
            hosts[key[0]].add(key[1])
        by_host = self.by_host(ctx, hosts)
        made = {}
        for inst, key in zip(instances, keys):
            if key not in made:
                made[key] = obj_base.obj_make_list(
                    ctx, objects.ServiceList(ctx), by_host.get(key, []))
            inst.services = made[key]
            if isinstance(inst, objects.Instance):
                inst.obj_reset_changes(['services'])
