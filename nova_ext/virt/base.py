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
"""The trait callback contract (``nova_ext.virt.trait_callbacks``).

When the status of a compute service changes (enabled or disabled, forced
down or up, heartbeat lost or regained, hypervisor connection lost or
regained), each enabled callback says which traits the root compute-node
resource providers of that service must carry. nova_ext applies the answer
to placement; a callback never talks to placement itself.
"""

import abc
import dataclasses


@dataclasses.dataclass(frozen=True)
class ServiceStatus:
    """What is known about one nova-compute service at one moment.

    :ivar host: the service's host name.
    :ivar disabled: the service is administratively disabled.
    :ivar forced_down: an operator or monitor forced the service down.
    :ivar up: the service reported in within
        ``[DEFAULT]service_down_time``, as nova_ext's heartbeat rule judges
        it (with Nova's ``db`` servicegroup driver, by its heartbeat
        counter rather than a timestamp); None when that is not known yet
        (a watcher or consumer that has not yet seen the counter move or
        stand still for a window), in which case callbacks leave heartbeat
        traits as they are.
    :ivar hypervisor_up: the virt driver reports its hypervisor reachable;
        None when the driver does not report it.
    """

    host: str
    disabled: bool = False
    forced_down: bool = False
    up: bool = True
    hypervisor_up: bool = None


@dataclasses.dataclass(frozen=True)
class TraitChange:
    """Traits to add to and remove from a root compute-node provider."""

    add: frozenset = frozenset()
    remove: frozenset = frozenset()

    def __post_init__(self):
        both = set(self.add) & set(self.remove)
        if both:
            raise ValueError('traits both added and removed: %s'
                             % ', '.join(sorted(both)))


class TraitCallback(abc.ABC):
    """Maps a compute service status to traits on its root providers."""

    @property
    @abc.abstractmethod
    def owned_traits(self):
        """The traits this callback manages, as a frozenset of names.

        nova_ext only ever removes traits that some enabled callback owns,
        so traits set by operators, virt drivers or other tools survive.
        """

    @abc.abstractmethod
    def traits_for(self, old, new):
        """Which traits must change for a status change of one service.

        :param old: the previous ``ServiceStatus``, or None when unknown
            (at start-up and during a reconcile).
        :param new: the current ``ServiceStatus``.
        :returns: a ``TraitChange`` whose traits are all in
            ``owned_traits``; an empty one when nothing changes. It is
            applied to every root compute-node provider of the service (an
            ironic-style service has several) and never to nested ones.
        """
