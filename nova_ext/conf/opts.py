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

"""Every nova_ext option group, for registration and for the generators.

``list_opts`` is the ``oslo.config.opts`` entry point ``nova_ext``, which
``oslo-config-generator`` and ``oslo_config.sphinxext`` read.
"""

from nova_ext.conf import api
from nova_ext.conf import cell0_rebuild
from nova_ext.conf import compute_status
from nova_ext.conf import index
from nova_ext.conf import instance_list
from nova_ext.conf import metrics
from nova_ext.conf import notifications
from nova_ext.conf import object_migrations
from nova_ext.conf import scheduler
from nova_ext.conf import searchlight

# One module per option group; a new group is a new module added here.
MODULES = (
    api,
    cell0_rebuild,
    compute_status,
    index,
    instance_list,
    metrics,
    notifications,
    object_migrations,
    scheduler,
    searchlight,
)


def register_all(conf):
    for module in MODULES:
        module.register_opts(conf)


def list_opts():
    return [(group, opts)
            for module in MODULES
            for group, opts in module.list_opts().items()]
