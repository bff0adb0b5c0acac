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
"""Steps 1-5 of a change: Nova's writes become numbered, held marks.

Capture (capture.py) holds a mark for each instance a Nova write changes,
under this process's lease (holders.py); the process's batcher (process.py,
batcher.py) records marks and releases in batches in the pending table
(pending.py), each mark numbered by the index's own sequence (sequence.py).
"""
