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
"""The ``cells`` instance list driver: Nova's own path, unchanged."""

from nova_ext.instance_list import base
from nova_ext.instance_list import serving


class CellsDriver(base.InstanceListDriver):
    """Query every cell database and merge-sort, as stock Nova does.

    This is the default driver and the fallback of every other one. It is
    Nova's function called as is, so its answers are Nova's by definition.
    """

    name = 'cells'

    def get_instance_objects_sorted(self, ctx, filters, limit, marker,
                                    expected_attrs, sort_keys, sort_dirs,
                                    cell_down_support=False):
        # nova-api may have routed Nova's function through nova_ext; the
        # cells driver is the function as Nova shipped it.
        return serving.stock()(
            ctx, filters, limit, marker, expected_attrs, sort_keys,
            sort_dirs, cell_down_support=cell_down_support)
