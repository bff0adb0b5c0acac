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
"""``nova.objects.request_spec``: RequestSpecs as Nova stores them.

Nova stores a RequestSpec in the API database's ``request_specs`` table,
the whole object serialised (``obj_to_primitive``, as JSON) in its
``spec`` column, and builds it again from there
(``RequestSpec._from_db_object``). The server list reads two of its fields;
nova_ext reads them from the stored JSON without building the object.

The contract test is
``nova_ext.tests.unit.seams.test_internals_request_specs``.
"""


from nova.db.api import models as api_models
from oslo_serialization import jsonutils
import sqlalchemy as sa

from nova_ext.seams import internals
from nova_ext.seams.internals import api_db

POINT = 'the RequestSpecs Nova stores (request_specs.spec)'


def _check():
    internals.check(POINT)


@api_db.reader
def _read(context, instance_uuids):
    table = api_models.RequestSpec.__table__
    return context.session.execute(
        sa.select(table.c.instance_uuid, table.c.spec).where(
            table.c.instance_uuid.in_(instance_uuids))).all()


def stored(context, instance_uuids):
    """``[(instance uuid, stored spec)]`` of the instances that have one.

    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    _check()
    return _read(context, instance_uuids)


def decode(spec):
    """``(availability_zone, scheduler_hints)`` of a stored spec, or None.

    The values the RequestSpec Nova builds from ``spec`` holds, or None
    when that object would hold something else: a spec with a server group
    (Nova reads the group again, and drops the ``group`` hint if it is
    gone) or without either field.

    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    _check()
    data = jsonutils.loads(spec).get('nova_object.data', {})
    if (data.get('instance_group') or
            'availability_zone' not in data or
            'scheduler_hints' not in data):
        return None
    return data['availability_zone'], data['scheduler_hints']
