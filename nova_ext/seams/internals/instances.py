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
"""``nova.objects.instance``: how Nova's list turns rows into Instances.

``nova.compute.instance_list.get_instance_objects_sorted`` asks its cells
for the joins ``_expected_cols`` names for the attributes it was asked for,
and builds the InstanceList of the rows with ``_make_instance_list``. The
instance list drivers that answer from rows (``index``, ``searchlight``)
call the same two functions, so that their Instances are Nova's.

The contract test is
``nova_ext.tests.unit.seams.test_internals_instances``.
"""


from nova import objects
from nova.objects import instance as instance_obj

from nova_ext.seams import internals

POINT = ('nova.objects.instance._expected_cols and '
         '_make_instance_list')


def _check():
    internals.check(POINT)


def expected_cols(attrs):
    """The joins Nova's instance query makes for Instance ``attrs``.

    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    _check()
    return instance_obj._expected_cols(attrs)


def make_instance_list(ctx, rows, attrs):
    """An ``InstanceList`` of instance rows, as Nova's list builds it.

    :param rows: rows (with their joins) of Nova's instance query.
    :param attrs: the Instance attributes to load from the joins.
    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    _check()
    return instance_obj._make_instance_list(
        ctx, objects.InstanceList(), rows, attrs)
