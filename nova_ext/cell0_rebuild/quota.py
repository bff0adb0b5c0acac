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
"""The quota check of a rebuild from cell0, before anything is changed.

The conductor rechecks quota once the server exists in its new cell, but a
failure there buries the server again with a quota fault. Checking first,
in nova-api, gives the caller Nova's 403 and leaves the server untouched.

What is already counted decides the deltas. Counted from the cell
databases (Nova's default), a server in cell0 counts itself, so the check
is the conductor's recheck: usage with nothing added must fit. Counted
from placement, instances still come from instance mappings (counted) but
cores and RAM from allocations, which a server in cell0 does not have.
"""

from nova.compute import utils as compute_utils
import nova.conf
from nova.limit import utils as limit_utils
from nova import objects

CONF = nova.conf.CONF


def check(context, instance, flavor):
    """Raise Nova's OverQuota if the server cannot be built within quota."""
    if limit_utils.use_unified_limits():
        # Unified limits count from placement and Keystone; the
        # conductor's recheck is the check (documented).
        return
    project_id, user_id = instance.project_id, instance.user_id
    if not CONF.quota.count_usage_from_placement:
        compute_utils.check_num_instances_quota(
            context, flavor, 0, 0, project_id=project_id, user_id=user_id,
            orig_num_req=1)
        return
    user_quotas = objects.Quotas.get_all_by_project_and_user(
        context, project_id, user_id)
    if not any(r in user_quotas for r in ('instances', 'cores', 'ram')):
        user_id = None
    objects.Quotas.check_deltas(
        context, {'instances': 0, 'cores': flavor.vcpus,
                  'ram': flavor.memory_mb},
        project_id, user_id=user_id, check_project_id=project_id,
        check_user_id=user_id)
