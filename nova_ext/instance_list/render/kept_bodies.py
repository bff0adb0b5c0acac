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
"""Written list bodies, kept by key, and the last one of each request.

A list's body is kept written under a key of the request and of what its
page's rows read (``page_bodies``, ``detail_bodies``). Nova's view writes
each server's document from the request and that server alone: a page
whose rows read what the last body given for the same request read, but
for some rows, is that body with those rows' documents written again
(``encode.Written.patched``). So each request's last body is named by
its key, which holds what its rows read.
"""

import hashlib

from nova_ext.instance_list import lru


def digest(read):
    """What tells the reads of two keys apart: the digest of their repr."""
    return hashlib.blake2b(repr(read).encode('utf-8'),
                           digest_size=16).digest()


class Key(tuple):
    """A body's key, with what its rows read (``shown``).

    :param shown: what the rows read, or a function that works it out:
        called at the first use, as a body found under the key mostly
        needs it not.
    """

    #: How many of the key's parts are the request's, not its rows'.
    REQUEST = 3

    def __new__(cls, parts, shown):
        made = super().__new__(cls, parts)
        made._shown = shown
        return made

    @property
    def shown(self):
        """What the key's rows read."""
        return self.work_out()

    def work_out(self):
        """:attr:`shown`, worked out now if it was not yet."""
        if callable(self._shown):
            self._shown = self._shown()
        return self._shown

    @property
    def request(self):
        """The part of the key that is the request's, not its rows'."""
        return self[:self.REQUEST]


class KeptBodies(lru.LRUCache):
    """Written bodies by :class:`Key`, and the last of each request."""

    def __init__(self, size):
        super().__init__(size)
        # {request: the Key of its last body}: what the rows read is kept
        # for that body only, and the body itself only while it is kept.
        self._last = lru.LRUCache(size)
        #: How many bodies were written from the last one.
        self.patches = 0

    def put(self, key, value):
        super().put(tuple(key) if isinstance(key, Key) else key, value)
        self.given(key, value)

    def given(self, key, value):
        """``value`` is the last body given for ``key``'s request."""
        if (isinstance(key, Key) and value.starts is not None and
                self._last.peek(key.request) != key):
            # Worked out now: a kept key holds no object of the request.
            key.work_out()
            self._last.put(key.request, key)

    def last(self, key):
        """``(what its rows read, body)`` last given for ``key``'s request.

        None if there is none, or it is no longer kept.
        """
        last = self._last.peek(key.request)
        if last is None:
            return None
        written = self.peek(tuple(last))
        return None if written is None else (last.shown, written)

    def patched(self):
        """A body was written from the last one."""
        with self._lock:
            self.patches += 1
