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
"""Neutron's answers for pages, kept while its feed proves them current.

With ``neutron_feed_url``, each nova-api process keeps the security groups
Neutron gave pages (``security_groups``), per token and page of servers,
with the feed's epoch they were asked at (``neutron_feed``): given again
only at that epoch.
"""

import collections
import threading

_LOCK = threading.Lock()


class Answers(object):
    """Neutron's answers for pages, each with the feed's epoch it holds at.

    A bounded, thread-safe LRU map of pages, each a token and its servers
    in the page's order: an answer is given only for the epoch it was asked
    at.
    """

    def __init__(self, size):
        self.size = size
        #: {(token, uuids): (epoch, groups, the set of uuids)}
        self._answers = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, token, uuids, epoch):
        """The page's answer kept at ``epoch``, or None."""
        key = (token, tuple(uuids))
        with self._lock:
            found = self._answers.get(key)
            if found is None or found[0] != epoch:
                return None
            self._answers.move_to_end(key)
            return found[1]

    def put(self, token, uuids, epoch, groups):
        uuids = tuple(uuids)
        with self._lock:
            self._answers[(token, uuids)] = (epoch, groups, frozenset(uuids))
            self._answers.move_to_end((token, uuids))
            while len(self._answers) > self.size:
                self._answers.popitem(last=False)

    def known(self, token, uuids, epoch):
        """What pages kept for ``token`` at ``epoch`` give ``uuids``.

        :returns: ``{uuid: its groups, or None where it has none}`` for
            those of ``uuids`` on such a page, the most recent first.
        """
        with self._lock:
            pages = [(held, groups) for (owner, _), (at, groups, held)
                     in reversed(self._answers.items())
                     if owner == token and at == epoch]
        known = {}
        for held, groups in pages:
            for uuid in held.intersection(uuids).difference(known):
                known[uuid] = groups.get(uuid)
        return known


_ANSWERS = {}


def answers(size):
    """This process's answers, ``size`` pages at most."""
    with _LOCK:
        if size not in _ANSWERS:
            _ANSWERS.clear()
            _ANSWERS[size] = Answers(size)
        return _ANSWERS[size]


def forget():
    """Forget every answer (tests)."""
    with _LOCK:
        _ANSWERS.clear()
