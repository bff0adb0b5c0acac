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
"""The steps of a rebuild from cell0, each undone if a later one fails.

1. create a build request for the server (the server is still shown from
   cell0, where its mapping points);
2. point its instance mapping at no cell, so Nova shows and lists it from
   the build request (spec 003);
3. hard-delete it from cell0, in one transaction and only while it is
   still the errored server that was checked;
4. cast the conductor's ``schedule_and_build_instances``.

Whichever step fails, the ones before it are undone in reverse, so the
server is shown from cell0 as it was (after step 3 that means burying it
there again). A second scheduling failure is the conductor's own business:
it buries the server in cell0 again, where it can be rebuilt again.
"""

from nova.compute import vm_states
from nova import context as nova_context
from nova.db.api import models as api_models
from nova.db.main import api as main_db
from nova import exception as nova_exception
from nova import objects
from oslo_db import exception as db_exception
from oslo_log import log as logging
from oslo_utils import excutils

from nova_ext.seams.internals import api_db

LOG = logging.getLogger(__name__)

# Never copied from a stored server into a new one: its row identity, what
# Instance.create() refuses or makes itself, and what is rebuilt apart.
_NOT_COPIED = frozenset(('id', 'deleted', 'deleted_at', 'updated_at',
                         'tags', 'fault', 'pci_devices', 'services',
                         'ec2_ids'))
_BDM_NOT_COPIED = frozenset(('id', 'instance', 'created_at', 'updated_at',
                             'deleted', 'deleted_at'))


class AlreadyRebuilding(Exception):
    """Another rebuild of this server holds its build request."""


def copy_instance(context, source, skip=()):
    """A new, unsaved Instance with ``source``'s loaded fields."""
    made = objects.Instance(context)
    for field in source.obj_fields:
        if field in _NOT_COPIED or field in skip:
            continue
        if source.obj_attr_is_set(field):
            setattr(made, field, getattr(source, field))
    return made


def copy_bdms(bdms, instance_uuid):
    """New, unsaved BlockDeviceMappings with the fields of ``bdms``."""
    made = []
    for bdm in bdms:
        new = objects.BlockDeviceMapping()
        for field in bdm.obj_fields:
            if field not in _BDM_NOT_COPIED and bdm.obj_attr_is_set(field):
                setattr(new, field, getattr(bdm, field))
        new.instance_uuid = instance_uuid
        made.append(new)
    return objects.BlockDeviceMappingList(objects=made)


def tag_list(instance_uuid, tags):
    return objects.TagList(objects=[
        objects.Tag(resource_id=instance_uuid, tag=t.tag) for t in tags])


class Buried(object):
    """A server as it is in cell0, enough to put it back there."""

    def __init__(self, instance, fault, bdms, tags, mapping):
        self.instance = instance
        self.fault = fault
        self.bdms = bdms
        self.tags = tags
        self.cell0 = mapping.cell_mapping


def create_build_request(build_request):
    try:
        build_request.create()
    except (db_exception.DBDuplicateEntry,
            nova_exception.ObjectActionError) as e:
        raise AlreadyRebuilding(str(e))


def destroy_build_request(build_request):
    try:
        build_request.destroy()
    except nova_exception.BuildRequestNotFound:
        pass


@api_db.writer
def _move_mapping(context, instance_uuid, from_cell_id, to_cell_id):
    table = api_models.InstanceMapping.__table__
    where = table.c.instance_uuid == instance_uuid
    where &= (table.c.cell_id.is_(None) if from_cell_id is None
              else table.c.cell_id == from_cell_id)
    return context.session.execute(
        table.update().where(where).values(cell_id=to_cell_id)).rowcount


def map_to(context, buried, cell):
    """Point the server's mapping at ``cell`` (None: no cell).

    A compare-and-set on the mapping's current cell, written directly:
    ``InstanceMapping.save()`` never writes a cell of None, and a mapping
    another request moved meanwhile must not be moved back.
    """
    if cell is None:
        moved = _move_mapping(context, buried.instance.uuid,
                              buried.cell0.id, None)
    else:
        moved = _move_mapping(context, buried.instance.uuid, None, cell.id)
    if not moved:
        raise nova_exception.ConstraintNotMet()


def hard_delete(context, buried):
    """Remove the server and its rows from cell0, if still as checked."""
    still = main_db.constraint(vm_state=main_db.equal_any(vm_states.ERROR),
                               task_state=main_db.equal_any(None))
    with nova_context.target_cell(context, buried.cell0) as cctxt:
        main_db.instance_destroy(cctxt, buried.instance.uuid,
                                 constraint=still, hard_delete=True)


def rebury(context, buried):
    """Put the server back in cell0 as it was (but its action history)."""
    with nova_context.target_cell(context, buried.cell0) as cctxt:
        instance = copy_instance(cctxt, buried.instance)
        instance.create()
        for bdm in copy_bdms(buried.bdms, instance.uuid):
            bdm._context = cctxt
            bdm.create()
        if buried.tags:
            objects.TagList.create(cctxt, instance.uuid,
                                   [t.tag for t in buried.tags])
        if buried.fault is not None:
            # Through the database API: InstanceFault.create() would stamp
            # the fault with the time of the undo.
            fault = buried.fault
            main_db.instance_fault_create(cctxt, {
                'instance_uuid': instance.uuid, 'code': fault.code,
                'message': fault.message, 'details': fault.details,
                'host': fault.host, 'created_at': fault.created_at})


def cast(compute_task_api, context, build_request, request_spec, image,
         admin_password, injected_files, requested_networks, bdms, tags):
    compute_task_api.schedule_and_build_instances(
        context, build_requests=[build_request],
        request_spec=[request_spec], image=image,
        admin_password=admin_password, injected_files=injected_files,
        requested_networks=requested_networks,
        block_device_mapping=bdms, tags=tags)


def run(context, buried, build_request, request_spec, image,
        admin_password, injected_files, requested_networks,
        compute_task_api):
    """Take ``buried`` back to scheduling through ``build_request``."""
    # The conductor creates these in the new cell from their changed
    # fields, which the build request's own copies no longer have once it
    # is saved; as Nova's API does, hand it the objects as made.
    bdms, tags = build_request.block_device_mappings, build_request.tags
    undo = []
    try:
        create_build_request(build_request)
        undo.append(('destroy the build request',
                     lambda: destroy_build_request(build_request)))
        map_to(context, buried, None)
        undo.append(('map the server to cell0 again',
                     lambda: map_to(context, buried, buried.cell0)))
        hard_delete(context, buried)
        undo.append(('bury the server in cell0 again',
                     lambda: rebury(context, buried)))
        cast(compute_task_api, context, build_request, request_spec, image,
             admin_password, injected_files, requested_networks, bdms, tags)
    except Exception as e:
        with excutils.save_and_reraise_exception():
            LOG.warning('Rebuild from cell0 of %s failed (%s); undoing %d '
                        'step(s)', buried.instance.uuid, e, len(undo))
            for what, step in reversed(undo):
                try:
                    step()
                except Exception:
                    # Keep undoing: each later step makes the server more
                    # visible than leaving it half-way.
                    LOG.exception('Rebuild from cell0 of %s: could not %s',
                                  buried.instance.uuid, what)
    LOG.info('Rebuild from cell0 of %s handed to the conductor',
             buried.instance.uuid)
