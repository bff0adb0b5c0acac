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
"""Compute object ids: link records to the compute node or service.

- ``migrations.py``: the online data migrations (``nova_ext.object_migrations``
  entry points) that fill ``instances.compute_id``,
  ``migrations.dest_compute_id`` and ``compute_nodes.service_id``.
- ``host_links.py``: the same links for one host, run by nova-conductor on
  behalf of a starting nova-compute (``nova_ext.seams.compute``).

Its options are in ``nova_ext/conf/object_migrations.py``; its audit
command is ``nova-ext-manage compute-ids`` (``nova_ext/cmd/compute_ids.py``).
"""
