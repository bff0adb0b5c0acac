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
"""``nova.api.openstack.compute.servers.ServersController``, run by nova_ext.

Rebuild from cell0 answers a rebuild with Nova's own controller (schemas,
policy, errors and response are Nova's), given a compute API of its own;
and it parses a create request's networks with that controller's parser,
into the ``NetworkRequestList`` Nova hands the conductor.

The contract test is
``nova_ext.tests.unit.seams.test_internals_servers_controller``.
"""

from nova.api.openstack.compute import servers as nova_servers

from nova_ext.seams import internals


def _check(name):
    internals.check(
        'nova.api.openstack.compute.servers.ServersController.%s' % name)


def controller(compute_api):
    """A new ``ServersController`` that calls ``compute_api``."""
    _check('compute_api')
    made = nova_servers.ServersController()
    made.compute_api = compute_api
    return made


def requested_networks(controller, networks):
    """Nova's ``NetworkRequestList`` for a create request's ``networks``.

    :param controller: a ``ServersController``, whose parser this is.
    :param networks: the request body's ``server.networks``.
    """
    _check('_get_requested_networks')
    return controller._get_requested_networks(networks)
