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
"""``nova.network.security_group_api``: a page's groups, as Nova asks.

Nova's detailed server list asks Neutron for its servers' security groups
with ``get_instances_security_groups_bindings``: their ports,
``MAX_SEARCH_IDS`` device ids per request (the ids go into the URL), one
request after another, then the groups of those ports. A server's groups
are read from its own ports and from those ports' groups only, so Nova's
function asked for a chunk of ``MAX_SEARCH_IDS`` servers answers the part
of the page's answer that is theirs, with the same request for their
ports: nova_ext asks for the chunks at once.

The contract test is
``nova_ext.tests.unit.seams.test_internals_security_group_api``.
"""

from nova.network import security_group_api

from nova_ext.seams import internals

POINT = 'nova.network.security_group_api.MAX_SEARCH_IDS'


def _check():
    internals.check(POINT)


def ids_per_request():
    """How many device ids Nova puts in one request for ports.

    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    _check()
    return security_group_api.MAX_SEARCH_IDS


def bindings(context, servers):
    """Nova's ``{server uuid: [group]}`` of ``servers`` (dicts with ``id``).

    The groups as Nova's detailed list shows them (``{'name': ...}``),
    asked of Neutron with the caller's token.
    """
    return security_group_api.get_instances_security_groups_bindings(
        context, servers)
