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
"""A process's wall clock set apart from the machine's, as another host's.

A host whose clock is wrong has a wrong wall clock (``time.time``, the
``updated_at`` Nova writes). Its monotonic clock counts from its own boot,
orders nothing across hosts, and times its waits correctly. So the cloud
fakes the wall clock alone, with Debian's libfaketime preloaded into the
process, and leaves the monotonic clock alone
(``FAKETIME_DONT_FAKE_MONOTONIC``): libfaketime's default shifts it too,
and then every timed wait of a Python thread (``Lock.acquire(timeout=)``,
``Event.wait``) waits for ever. A process whose heartbeat never beats is
not what a host with a wrong clock is.

With the monotonic clock left alone, libfaketime 0.9.10 fails
``clock_nanosleep`` on it with an absolute deadline, which is how Python's
``time.sleep`` waits, with EINVAL; ``wallclock/sitecustomize.py``, first
on the process's ``PYTHONPATH``, gives such a process a ``time.sleep``
that waits in ``select``.
"""

import glob
import os

from nova_ext_tools.cloud import procs

#: libfaketime's thread-safe library (Debian's faketime package), in the
#: machine's multiarch directory.
LIBRARY = '/usr/lib/*/faketime/libfaketimeMT.so.1'
#: The directory of the sitecustomize module of a process on such a clock.
SHIM = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'wallclock')


def environ(offset):
    """The variables that run a process with its clock ``offset`` off.

    :param offset: libfaketime's relative offset, such as ``'-5s'``. The
        process's ``PYTHONPATH`` is kept, after :data:`SHIM`.
    """
    found = glob.glob(LIBRARY)
    if not found:
        raise procs.CloudError("no libfaketime (%s): install Debian's "
                               "faketime" % LIBRARY)
    path = [SHIM] + [p for p in os.environ.get('PYTHONPATH', '').split(
        os.pathsep) if p]
    return {'LD_PRELOAD': found[0], 'FAKETIME': offset,
            'FAKETIME_DONT_FAKE_MONOTONIC': '1',
            'PYTHONPATH': os.pathsep.join(path)}
