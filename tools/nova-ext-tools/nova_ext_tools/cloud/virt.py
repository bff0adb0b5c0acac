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
"""The computes' virt driver: Nova's fake one, whose servers outlast a
restart of nova-compute, as a hypervisor's guests do."""

from nova.compute import power_state
from nova import context as nova_context
from nova import objects
from nova.virt import fake

#: The power states a guest is kept in; any other (a build that had not
#: spawned, a server being deleted) is left to Nova, as a hypervisor
#: without the guest would leave it.
KEPT = (power_state.RUNNING, power_state.SHUTDOWN, power_state.PAUSED,
        power_state.SUSPENDED, power_state.CRASHED)


class FakeDriverKept(fake.FakeDriverWithoutFakeNodes):
    """``fake.FakeDriverWithoutFakeNodes``, its servers kept across starts.

    Nova's fake driver holds its guests in memory only: a nova-compute
    started again would know none of its servers, refuse to stop or start
    them, and record each as gone at its next power-state sync. This one
    takes, when the compute starts, the servers Nova has on its host, in
    the power state Nova recorded.
    """

    def init_host(self, host):
        super().init_host(host)
        ctx = nova_context.get_admin_context()
        for instance in objects.InstanceList.get_by_host(
                ctx, host, expected_attrs=[]):
            if instance.power_state in KEPT:
                self.instances[instance.uuid] = fake.FakeInstance(
                    instance.name, instance.power_state, instance.uuid)
