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
"""Trait callbacks shipped with nova_ext (``nova_ext.virt.trait_callbacks``).

``compute-status`` keeps the two status traits of a compute service's root
providers true: ``COMPUTE_STATUS_DISABLED`` (the standard trait Nova's own
``compute_status_filter`` forbids) while it is disabled, and
:data:`COMPUTE_STATUS_DOWN` while it is forced down, has stopped reporting
in, or its hypervisor is unreachable.
"""

import os_traits

from nova_ext.virt import base

#: Marks root compute-node providers whose service is down or forced down.
#: A custom trait: os-traits has no standard one for it.
COMPUTE_STATUS_DOWN = 'CUSTOM_COMPUTE_STATUS_DOWN'
COMPUTE_STATUS_DISABLED = os_traits.COMPUTE_STATUS_DISABLED


def _setting(trait, wanted):
    """A TraitChange that sets (wanted True) or unsets trait."""
    if wanted:
        return frozenset([trait]), frozenset()
    return frozenset(), frozenset([trait])


class ComputeStatusCallback(base.TraitCallback):
    """Disabled and down status as traits.

    Level-triggered: the answer depends on new only, and names both
    traits either way, so applying it again (a reconcile, a second watcher,
    a redelivered notification) changes nothing. What is not known is left
    alone: while new.up is None (a watcher that has not yet confirmed a
    missed heartbeat) the down trait stays as placement has it, unless the
    service is forced down or its hypervisor is reported down.
    """

    owned_traits = frozenset([COMPUTE_STATUS_DISABLED, COMPUTE_STATUS_DOWN])

    def traits_for(self, old, new):
        add, remove = _setting(COMPUTE_STATUS_DISABLED, new.disabled)
        if new.forced_down or new.up is False or new.hypervisor_up is False:
            down = True
        elif new.up is None:
            down = None
        else:
            down = False
        if down is not None:
            more_add, more_remove = _setting(COMPUTE_STATUS_DOWN, down)
            add, remove = add | more_add, remove | more_remove
        return base.TraitChange(add=add, remove=remove)
