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
"""``BuildCapture``: what nova_ext records when a server is created.

Nova persists a server's request spec without its requested networks, and
nothing in cell0 remembers them, so a server buried there could not get
its networks back. nova-api records them (as Nova's own
``NetworkRequestList``) for each server it accepts, and whether the
request injected personality files, which nothing can restore.
"""

from nova.objects import base as nova_base
from nova.objects import fields
from oslo_serialization import jsonutils
from oslo_utils import timeutils

from nova_ext.cell0_rebuild import models
from nova_ext.seams.internals import api_db


class BuildCapture(nova_base.NovaObject):
    """One server's creation request, as far as a rebuild needs it."""

    OBJ_PROJECT_NAMESPACE = 'nova_ext'
    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'id': fields.IntegerField(read_only=True),
        'instance_uuid': fields.UUIDField(),
        'project_id': fields.StringField(),
        'reservation_id': fields.StringField(nullable=True),
        # None when the request named no networks (before 2.37), which
        # Nova also passes on as None.
        'requested_networks': fields.ObjectField('NetworkRequestList',
                                                 nullable=True),
        'personality': fields.BooleanField(default=False),
        'created_at': fields.DateTimeField(),
    }

    @classmethod
    def _from_db_object(cls, context, obj, row):
        from nova import objects

        for name in ('id', 'instance_uuid', 'project_id', 'reservation_id',
                     'personality'):
            setattr(obj, name, getattr(row, name))
        obj.created_at = row.created_at.replace(tzinfo=None)
        networks = None
        if row.requested_networks is not None:
            networks = objects.NetworkRequestList.obj_from_primitive(
                jsonutils.loads(row.requested_networks))
        obj.requested_networks = networks
        obj._context = context
        obj.obj_reset_changes()
        return obj

    def _values(self):
        networks = self.requested_networks
        return {
            'instance_uuid': self.instance_uuid,
            'project_id': self.project_id,
            'reservation_id': self.reservation_id,
            'requested_networks': None if networks is None else
            jsonutils.dumps(networks.obj_to_primitive()),
            'personality': self.personality,
            'created_at': self.created_at,
        }

    @classmethod
    def make(cls, context, instance_uuid, project_id, reservation_id,
             requested_networks, personality):
        return cls(context, instance_uuid=instance_uuid,
                   project_id=project_id, reservation_id=reservation_id,
                   requested_networks=requested_networks,
                   personality=bool(personality),
                   created_at=timeutils.utcnow().replace(tzinfo=None))

    @staticmethod
    @api_db.writer
    def create_all(context, captures):
        """Store ``captures`` in one transaction; known servers are kept."""
        uuids = [c.instance_uuid for c in captures]
        known = {u for (u,) in context.session.query(
            models.BuildCapture.instance_uuid).filter(
                models.BuildCapture.instance_uuid.in_(uuids))}
        for capture in captures:
            if capture.instance_uuid in known:
                continue
            context.session.add(models.BuildCapture(**capture._values()))
        return len(set(uuids) - known)

    @classmethod
    @api_db.reader
    def get_by_instance_uuid(cls, context, instance_uuid):
        """The capture of a server, or None if nova_ext recorded none."""
        row = context.session.query(models.BuildCapture).filter_by(
            instance_uuid=instance_uuid).first()
        return None if row is None else cls._from_db_object(
            context, cls(), row)

    @staticmethod
    @api_db.writer
    def destroy_by_instance_uuids(context, instance_uuids):
        """Forget the captures of these servers; how many there were."""
        if not instance_uuids:
            return 0
        return context.session.query(models.BuildCapture).filter(
            models.BuildCapture.instance_uuid.in_(list(instance_uuids))
        ).delete(synchronize_session=False)

    @staticmethod
    @api_db.reader
    def instance_uuids(context, limit, after_id=0):
        """``[(id, instance_uuid)]`` in id order, for the purge."""
        query = context.session.query(
            models.BuildCapture.id, models.BuildCapture.instance_uuid
        ).filter(models.BuildCapture.id > after_id).order_by(
            models.BuildCapture.id).limit(limit)
        return [tuple(r) for r in query]
