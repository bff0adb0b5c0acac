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
"""nova_ext's global instance index: one database for every cell.

Its subpackages, in the order a change flows through them:

* ``marks``: steps 1-5, a Nova write or notification -> a numbered, held mark;
* ``feeds``: step 4, Nova's notifications become marks;
* ``apply``: step 6, marks re-read from the cells and written;
* ``repair``: step 7, the reconcile pass, and the first fill (sync);
* ``upkeep``: the schema and its migrations, and what operators see.

Beside them, ``schema`` (the index's own tables) and the plumbing they all
share: ``db``, ``sqlite``, ``lock_waits``, ``backoff``, ``ids``. The
contributor docs' architecture page follows a change through them.
"""
