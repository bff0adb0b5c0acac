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
request after another (``_get_ports_from_server_list``), then the groups
of all those ports (``_get_secgroups_from_port_list``). nova_ext makes the
same requests in the same two steps, the first a chunk of servers at a
time (:func:`ports`), so that it can send the chunks at once, the second
with :func:`bindings_of_ports`, a copy of the rest of Nova's function.

The contract test is
``nova_ext.tests.unit.seams.test_internals_security_group_api``.
"""

from nova.network import neutron as neutronapi
from nova.network import security_group_api

from nova_ext.seams import internals

POINT = 'nova.network.security_group_api.get_instances_security_groups_' \
    'bindings'


def _check():
    internals.check(POINT)


def ids_per_request():
    """How many device ids Nova puts in one request for ports.

    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    _check()
    return security_group_api.MAX_SEARCH_IDS


def ports(context, uuids):
    """Nova's request(s) for the ports of the servers ``uuids``.

    :returns: the ports, each with ``device_id`` and ``security_groups``.
    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    _check()
    neutron = neutronapi.get_client(context)
    return security_group_api._get_ports_from_server_list(
        [{'id': uuid} for uuid in uuids], neutron)


def bindings_of_ports(context, ports, detailed=False):
    """Nova's ``{server uuid: [group]}``, from the ports :func:`ports` read.

    Nova's ``get_instances_security_groups_bindings`` after it has read the
    ports: one request for their groups, with the caller's token.

    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    _check()
    neutron = neutronapi.get_client(context)

    # If detailed is True, we want all fields from the security groups
    # including the potentially slow-to-join security_group_rules field.
    # But if detailed is False, only get the id and name fields since
    # that's all we'll use below.
    fields = None if detailed else ['id', 'name']
    security_groups = security_group_api._get_secgroups_from_port_list(
        ports, neutron, fields=fields)

    instances_security_group_bindings = {}
    for port in ports:
        for port_sg_id in port.get('security_groups', []):

            # Note:  have to check we found port_sg as its possible
            # the port has an SG that this user doesn't have access to
            port_sg = security_groups.get(port_sg_id)
            if port_sg:
                if detailed:
                    sg_entry = (
                        security_group_api.
                        _convert_to_nova_security_group_format(port_sg))
                    instances_security_group_bindings.setdefault(
                        port['device_id'], []).append(sg_entry)
                else:
                    # name is optional in neutron so if not specified
                    # return id
                    name = port_sg.get('name')
                    if not name:
                        name = port_sg.get('id')
                    sg_entry = {'name': name}
                    instances_security_group_bindings.setdefault(
                        port['device_id'], []).append(sg_entry)

    return instances_security_group_bindings


def bindings(context, servers):
    """Nova's ``{server uuid: [group]}`` of ``servers`` (dicts with ``id``).

    The groups as Nova's detailed list shows them (``{'name': ...}``),
    asked of Neutron with the caller's token, by Nova's own function.
    """
    return security_group_api.get_instances_security_groups_bindings(
        context, servers)
