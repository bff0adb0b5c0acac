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
"""``nova.cmd.compute``: the signs that a process is nova-compute.

Nova has no start-up hook for nova-compute. ``nova.cmd.compute.main``
turns off database access (``nova.db.main.api.DISABLE_DB_ACCESS``) and
sends objects to the conductor (``NovaObject.indirection_api``) right
before it creates its service; no other Nova process does both.

The contract test is
``nova_ext.tests.unit.seams.test_internals_compute_service``.
"""


from nova.db.main import api as main_db_api
from nova.objects import base as nova_objects_base

from nova_ext.seams import internals

POINT = 'nova.db.main.api.DISABLE_DB_ACCESS'


def _check():
    internals.check(POINT)


def is_nova_compute():
    """Whether this process is a nova-compute that has set itself up.

    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    _check()
    return bool(main_db_api.DISABLE_DB_ACCESS and
                nova_objects_base.NovaObject.indirection_api is not None)
