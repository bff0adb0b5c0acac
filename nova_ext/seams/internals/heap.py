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
"""The garbage collector of a nova-api process that renders server lists.

Once it has loaded Nova, a nova-api process holds some 300,000 objects that
CPython's collector tracks (Nova's modules, its configuration, the database
mappings, policy rules) and keeps them for its whole life. A full
collection walks every one of them, and one is due each time the objects
that outlived the younger collections add up to a quarter of those it
walked the last time: a page of a thousand servers keeps thousands of
objects alive while it is rendered, so under a steady stream of list
requests a full collection comes every second or two, inside a request,
and takes 150 to 200 ms of it on the machine of the benchmarks.

:func:`freeze_once` moves what the process holds at that moment into the
collector's permanent generation (``gc.freeze``): later full collections
walk only what was made since. Frozen objects are still freed as soon as
nothing refers to them; only reference cycles among them are never
collected, which is why the garbage is collected first.

The contract test is ``nova_ext.tests.unit.seams.test_internals_heap``.
"""

import gc
import threading

from oslo_log import log as logging

from nova_ext.seams import internals

LOG = logging.getLogger(__name__)

POINT = 'gc.freeze'

_LOCK = threading.Lock()
#: How many objects the process froze, once it has.
_FROZEN = None


def freeze_once():
    """Freeze every object this process holds now, the first time only.

    :returns: how many objects are frozen, or None if they were already.
    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    global _FROZEN
    internals.check(POINT)
    if _FROZEN is not None:
        # Every later list of the process: no lock to take.
        return None
    with _LOCK:
        if _FROZEN is not None:
            return None
        # Cycles frozen now would never be collected.
        gc.collect()
        gc.freeze()
        _FROZEN = gc.get_freeze_count()
    LOG.info('nova_ext: %d objects this process holds are out of the '
             'garbage collector\'s walks from now on (gc_freeze)', _FROZEN)
    return _FROZEN


def frozen():
    """How many objects :func:`freeze_once` froze; None before it did."""
    return _FROZEN


def reset():
    """Have the collector walk the frozen objects again (tests)."""
    global _FROZEN
    with _LOCK:
        if _FROZEN is not None:
            gc.unfreeze()
            _FROZEN = None
