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
"""``build-capture-purge``: forget what no rebuild from cell0 will need.

A server's capture (nova_ext.cell0_rebuild.objects) is needed while the
server may be in cell0: until it is built in a real cell, or deleted.
nova-api forgets it when the server is deleted through the API; this
online migration forgets the rest: servers mapped to a real cell (built,
or rebuilt from cell0), deleted ones (mapping queued for delete, or gone),
and captures whose server never came to be. Captures of servers in cell0
or still waiting for a cell are never found.

The captures live in the API database, so every cell's run looks at the
same rows; after the first has purged them the others find nothing.
"""

from nova.db.api import models as api_models
from nova.objects import cell_mapping
import sqlalchemy as sa

from nova_ext.cell0_rebuild import models
from nova_ext.object_migrations import base
from nova_ext.seams.internals import api_db

CELL0_UUID = cell_mapping.CellMapping.CELL0_UUID


def _orphans(session, limit):
    captures = models.BuildCapture.__table__
    mappings = api_models.InstanceMapping.__table__
    cells = api_models.CellMapping.__table__
    joined = captures.outerjoin(
        mappings, mappings.c.instance_uuid == captures.c.instance_uuid
    ).outerjoin(cells, cells.c.id == mappings.c.cell_id)
    query = sa.select(captures.c.id).select_from(joined).where(sa.or_(
        mappings.c.id.is_(None),
        mappings.c.queued_for_delete == sa.true(),
        sa.and_(mappings.c.cell_id.isnot(None), cells.c.uuid != CELL0_UUID),
    )).order_by(captures.c.id).limit(limit)
    return [row[0] for row in session.execute(query)]


class PurgeBuildCaptures(base.ObjectMigration):
    """Deletes the captures of servers that can no longer be in cell0."""

    @staticmethod
    @api_db.writer
    def _purge(context, max_count):
        ids = _orphans(context.session, max_count)
        if not ids:
            return 0, 0
        table = models.BuildCapture.__table__
        done = context.session.execute(
            table.delete().where(table.c.id.in_(ids))).rowcount
        return len(ids), done

    def __call__(self, context, max_count):
        return self._purge(context, max_count)

    @staticmethod
    @api_db.reader
    def remaining(context):
        return len(_orphans(context.session, None))
