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
"""A bounded, thread-safe map, least recently used evicted first."""

import collections
import threading


class LRUCache(object):
    """Values kept as they are put and handed out as they are kept.

    Whoever reads a value copies what it may change.
    """

    def __init__(self, size):
        self.size = size
        self._values = collections.OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key):
        """What is kept under ``key``, or None."""
        with self._lock:
            value = self._values.get(key)
            if value is None:
                self.misses += 1
                return None
            self._values.move_to_end(key)
            self.hits += 1
            return value

    def peek(self, key):
        """What is kept under ``key``, or None, not counted as a use."""
        with self._lock:
            return self._values.get(key)

    def put(self, key, value):
        """Keep ``value`` under ``key``."""
        with self._lock:
            self._values[key] = value
            self._values.move_to_end(key)
            while len(self._values) > self.size:
                self._values.popitem(last=False)

    def __len__(self):
        return len(self._values)


class PerProcess(object):
    """A process's one cache, made at its first use, anew if resized."""

    def __init__(self, make, option):
        """:param make: a function of a size, giving an empty cache.

        :param option: the ``[nova_ext_instance_list]`` option that sizes
            it (:meth:`of`).
        """
        self._make = make
        self._option = option
        self._cache = None
        self._lock = threading.Lock()

    def of(self, conf):
        """The cache as ``conf`` sizes it (:meth:`get`); None if 0."""
        return self.get(getattr(conf.nova_ext_instance_list, self._option))

    def get(self, size):
        """The cache of ``size`` entries; None if ``size`` is 0.

        At 0, a cache already made is kept, unused, until the size
        changes.
        """
        if not size:
            return None
        with self._lock:
            if self._cache is None or self._cache.size != size:
                self._cache = self._make(size)
            return self._cache

    def reset(self):
        """Forget the cache (tests)."""
        with self._lock:
            self._cache = None
