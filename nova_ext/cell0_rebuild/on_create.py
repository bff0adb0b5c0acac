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
"""Recording, when Nova accepts ``POST /servers``, what a rebuild needs.

The requested networks are parsed by Nova's own controller code into the
``NetworkRequestList`` Nova hands the conductor. The servers a request
made are known from the response: its ``server.id`` for one server; for
several (``min_count``/``max_count``), every server of the reservation,
read from the build requests first and then from every cell, as Nova's
own list does, so that none is missed while it moves between them.
"""

from nova import objects
from oslo_log import log as logging

from nova_ext.cell0_rebuild import objects as ext_objects
from nova_ext.seams.internals import cells as nova_cells
from nova_ext.seams.internals import servers_controller

LOG = logging.getLogger(__name__)


def requested_networks(controller, server):
    """Nova's NetworkRequestList for a create request's ``server``.

    :param controller: a Nova ``ServersController``, whose parser this is.
    """
    raw = server.get('networks')
    if raw is None:
        return None
    return servers_controller.requested_networks(controller, raw)


def _count(server):
    min_count = server.get('min_count', 1)
    return max(int(min_count), int(server.get('max_count', min_count)))


def reservation_uuids(context, reservation_id):
    """Every server of a reservation, in the caller's project."""
    filters = {'reservation_id': reservation_id,
               'project_id': context.project_id, 'deleted': False}
    uuids = {br.instance_uuid for br in
             objects.BuildRequestList.get_by_filters(context, filters)}

    def _cell(cctxt):
        return [i.uuid for i in objects.InstanceList.get_by_filters(
            cctxt, filters, expected_attrs=[])]

    for cell_uuid, found in nova_cells.scatter(
            context, nova_cells.all_cells(), _cell).items():
        if nova_cells.failure(found) is not None:
            LOG.warning('Cell %s did not answer while recording reservation '
                        '%s; its servers cannot be rebuilt from cell0',
                        cell_uuid, reservation_id)
            continue
        uuids.update(found)
    return sorted(uuids)


def record(controller, context, server, answer):
    """Store the captures of the servers a 202 ``answer`` made.

    :param controller: a Nova ``ServersController``.
    :param server: the ``server`` object of the request body.
    :param answer: the JSON body of Nova's 202.
    :returns: the number of servers recorded.
    """
    networks = requested_networks(controller, server)
    reservation_id = answer.get('reservation_id')
    first = (answer.get('server') or {}).get('id')
    if _count(server) == 1 and first:
        uuids = [first]
    else:
        reservation_id = reservation_id or controller.compute_api.get(
            context, first).reservation_id
        uuids = reservation_uuids(context, reservation_id)
    captures = [ext_objects.BuildCapture.make(
        context, uuid, context.project_id, reservation_id, networks,
        bool(server.get('personality'))) for uuid in uuids]
    return ext_objects.BuildCapture.create_all(context, captures)
