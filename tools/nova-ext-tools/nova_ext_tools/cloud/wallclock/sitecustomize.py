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
"""time.sleep for a process whose wall clock libfaketime sets.

Python imports this at startup when its directory is on ``PYTHONPATH``
(``nova_ext_tools.cloud.clock``). Where ``time.sleep`` fails with EINVAL
(libfaketime's ``clock_nanosleep`` with the monotonic clock left real),
it is replaced by a wait in ``select``, timed by the monotonic clock;
where it works, nothing changes.
"""

import errno
import select
import time

_SLEEP = time.sleep


def _broken():
    try:
        _SLEEP(0)
    except OSError as e:
        return e.errno == errno.EINVAL
    return False


def sleep(seconds):
    if seconds < 0:
        raise ValueError('sleep length must be non-negative')
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        select.select([], [], [], left)


if _broken():
    time.sleep = sleep
