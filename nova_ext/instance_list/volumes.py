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
"""The volumes attached to a page of servers, read as Nova's view does.

Nova's server view (``_get_instance_bdms_in_multiple_cells``) finds the
cells of the page through the instance mappings, then reads every block
device mapping of the page from each of those cells in parallel, building
an InstanceMapping and a BlockDeviceMapping object per row. Here each
cell is asked only for the servers its mappings name (a server's block
device mappings are in its cell), so the cost of a page does not grow
with the number of cells it spans, and only the columns the view reads
(``volume_id``, ``delete_on_termination``) are read, as dicts.
"""

from nova import context as nova_context
from nova.db.api import api as api_db_api
from nova.db.api import models as api_models
from nova.db.main import api as main_db_api
from nova.db.main import models
from oslo_log import log as logging
import sqlalchemy as sa

LOG = logging.getLogger(__name__)


@api_db_api.context_manager.reader
def _uuids_by_cell_id(context, instance_uuids):
    table = api_models.InstanceMapping.__table__
    found = {}
    for uuid, cell_id in context.session.execute(
            sa.select(table.c.instance_uuid, table.c.cell_id).where(
                table.c.instance_uuid.in_(instance_uuids),
                table.c.cell_id.isnot(None))):
        found.setdefault(cell_id, []).append(uuid)
    return found


@main_db_api.pick_context_manager_reader
def _volumes(context, uuids_by_cell):
    model = models.BlockDeviceMapping
    query = main_db_api.model_query(context, model).filter(
        model.instance_uuid.in_(uuids_by_cell[context.cell_uuid])
    ).with_entities(
        model.instance_uuid, model.volume_id, model.delete_on_termination)
    found = {}
    for uuid, volume_id, delete_on_termination in query:
        found.setdefault(uuid, []).append(
            {'volume_id': volume_id,
             'delete_on_termination': delete_on_termination})
    return found


def by_instance_uuid(context, instance_uuids):
    """``{uuid: [{'volume_id', 'delete_on_termination'}]}`` of a page."""
    if not instance_uuids:
        return {}
    by_cell_id = _uuids_by_cell_id(context, instance_uuids)
    nova_context.load_cells()
    cells = [cell for cell in nova_context.CELLS if cell.id in by_cell_id]
    results = nova_context.scatter_gather_cells(
        context, cells, nova_context.CELL_TIMEOUT, _volumes,
        {cell.uuid: by_cell_id[cell.id] for cell in cells})
    bdms = {}
    for cell_uuid, result in results.items():
        if isinstance(result, Exception):
            LOG.warning('Failed to get block device mappings for cell %s',
                        cell_uuid)
        elif result is nova_context.did_not_respond_sentinel:
            LOG.warning('Timeout getting block device mappings for cell '
                        '%s', cell_uuid)
        else:
            bdms.update(result)
    return bdms
