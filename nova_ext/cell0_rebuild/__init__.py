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
"""Rebuild from cell0 (spec 004): a server that failed scheduling for lack
of resources is scheduled again, keeping its UUID.

- ``objects.py``/``models.py``/``migration.py``: what nova_ext records at
  create time because Nova does not keep it (the requested networks), in
  a table of its own in Nova's API database.
- ``eligibility.py``: which servers in cell0 may be rebuilt.
- ``flow.py``: the steps that take a buried server back to a build
  request and hand it to the conductor, each undone if a later one fails.
- ``compute_api.py``: the compute API nova_ext's rebuild runs Nova's
  controller with; ``quota.py``: its quota check.
- ``handler.py``: the ``cell0-rebuild`` API handler
  (``nova_ext.api.handlers`` namespace); ``capture.py``: what it records
  when Nova accepts a create.
- ``build_captures.py``: the ``build-capture-purge`` online data migration
  (``nova_ext.object_migrations`` namespace).

Its options are in ``nova_ext/conf/cell0_rebuild.py``; its tables are
created by ``nova-ext-manage api_db sync`` (``nova_ext/cmd/manage_db.py``).
"""
