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
"""What each process makes for itself: thread pools, engines, feeds.

A process forked from one that made such an object inherits it without its
threads (a pool whose workers never run, a feed nobody reads) and with its
parent's connections. uWSGI forks its workers without Python's fork hooks
(``os.register_at_fork``), so nothing can be told of the fork: the process
id is looked at on each use instead, and a child makes its own objects.
"""

import os
import threading


class Registry(object):
    """This process's object for each key, made on first use."""

    def __init__(self):
        #: {process id: (its lock, {key: object})}. The lock is a
        #: process's own too: one held by another thread at the fork stays
        #: held in the child, which has no such thread to release it.
        self._processes = {}

    def _own(self):
        pid = os.getpid()
        own = self._processes.get(pid)
        if own is None:
            # One step under the interpreter's lock: every thread of the
            # process gets the same lock and objects.
            own = self._processes.setdefault(pid, (threading.Lock(), {}))
        return own

    def get(self, key, make):
        """This process's object for ``key``; ``make()`` makes it."""
        lock, made = self._own()
        with lock:
            found = made.get(key)
            if found is None:
                found = made[key] = make()
            return found

    def values(self):
        """This process's objects."""
        lock, made = self._own()
        with lock:
            return list(made.values())

    def clear(self):
        """Forget this process's objects; returns them, to stop or close."""
        lock, made = self._own()
        with lock:
            objects = list(made.values())
            made.clear()
        return objects
