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
"""Servers in every state, in every cell, for the instance index tests.

Built through Nova's API and services, so every row is one Nova wrote.
"""

import datetime

import nova.conf as nova_conf
from nova import context as nova_context
from nova import objects
from nova.tests import fixtures as nova_fixtures
from nova.tests.functional.api import client
from oslo_utils import timeutils

OTHER_PROJECT = '0ff1ce0ff1ce0ff1ce0ff1ce0ff1ce00'


def other_project_api(test):
    """A member of another project, at the test's microversion."""
    api = client.TestOpenStackClient(
        'alice', test.api.base_url, project_id=OTHER_PROJECT,
        roles=['reader', 'member'])
    api.microversion = test.api.microversion
    return api


def compute_service(host):
    """The nova-compute ``Service`` of ``host``, read from its cell."""
    ctxt = nova_context.get_admin_context()
    mapping = objects.HostMapping.get_by_host(ctxt, host)
    with nova_context.target_cell(ctxt, mapping.cell_mapping) as cctxt:
        return objects.Service.get_by_compute_host(cctxt, host)


def age_heartbeat(host):
    """Make the last heartbeat of ``host`` twice ``service_down_time`` old.

    Unless the compute reports again, Nova then shows it down (UNKNOWN).
    """
    service = compute_service(host)
    service.last_seen_up = timeutils.utcnow() - datetime.timedelta(
        seconds=nova_conf.CONF.service_down_time * 2)
    service.save()


def build(test):
    """Create the population; returns ``{label: server dict}``.

    Labels and what they are:

    - ``active1``: cell1, ACTIVE, tags t1 t2, metadata, a port.
    - ``locked2``: cell2, ACTIVE, locked, a port.
    - ``stopped1``: cell1, SHUTOFF.
    - ``other2``: another project (members cannot pick a host), ACTIVE,
      tag t2.
    - ``error0``: NoValidHost, ERROR in cell0, with a fault.
    - ``deleted1``: deleted (a soft-deleted row in cell1).
    - ``shelved2``: another project, SHELVED_OFFLOADED (host None).
    - ``resized1``: resized and confirmed to a bigger flavor, cell1.
    - ``verify2``: resized, left in VERIFY_RESIZE, cell2.
    - ``zoned1``: cell1, booted into zone ``nova`` (a pinned zone, 2.96).
    - ``grouped2``: cell2, in a server group, with a scheduler hint of its
      own (Nova re-reads the group for the hints it shows, 2.100).
    - ``volume1``: cell1, with a volume attached.
    """
    test.flags(allow_resize_to_same_host=True)
    # The ERROR server still counts against quota.
    test.flags(cores=100, group='quota')
    other = other_project_api(test)
    servers = {}

    # Nova's helper picks the first flavor listed when none is given, which
    # can be one created below; ask for m1.tiny explicitly.
    tiny = '1'

    def create(label, host=None, api=None, networks='none', flavor_id=tiny,
               **kw):
        servers[label] = test._create_server(
            flavor_id=flavor_id,
            name='srv-%s' % label, host=host, networks=networks, api=api,
            **kw)
        return servers[label]

    # Ports on Neutron's first network, for addresses and the ip filters.
    net = [{'uuid': nova_fixtures.NeutronFixture.network_1['id']}]
    s = create('active1', 'compute1-1', networks=net)
    for tag in ('t1', 't2'):
        test.api.api_put('/servers/%s/tags/%s' % (s['id'], tag), None,
                         check_response_status=[201])
    test.api.api_post('/servers/%s/metadata' % s['id'],
                      {'metadata': {'purpose': 'parity', 'tier': 'gold'}})
    s = create('locked2', 'compute2-1', networks=net)
    test.api.post_server_action(s['id'], {'lock': {'locked_reason': 'x'}})
    s = create('stopped1', 'compute1-1')
    test._stop_server(s)
    s = create('other2', api=other)
    other.api_put('/servers/%s/tags/t2' % s['id'], None,
                  check_response_status=[201])
    # More VCPU than any fake host offers (2 x allocation ratio 4), within
    # the default quota.
    huge = test._create_flavor(memory_mb=512, vcpu=10, disk=1)
    create('error0', flavor_id=huge, expected_state='ERROR')
    s = create('deleted1', 'compute1-1')
    test._delete_server(s)
    s = create('shelved2', api=other)
    other.post_server_action(s['id'], {'shelve': {}})
    test._wait_for_state_change(s, 'SHELVED_OFFLOADED')
    bigger = test._create_flavor(memory_mb=1024, vcpu=1, disk=2)
    s = create('resized1', 'compute1-1')
    test._resize_server(s, bigger)
    test._confirm_resize(s)
    s = create('verify2', 'compute2-1')
    test._resize_server(s, bigger)
    create('zoned1', az='nova:compute1-1')
    group = test.api.post_server_groups(
        {'name': 'parity', 'policy': 'affinity'})
    body = test._build_server(name='srv-grouped2', flavor_id=tiny,
                              networks='none', host='compute2-1')
    s = test.admin_api.post_server({
        'server': body,
        'os:scheduler_hints': {'group': group['id'], 'color': 'blue'}})
    servers['grouped2'] = test._wait_for_state_change(s, 'ACTIVE')
    s = create('volume1', 'compute1-1')
    test._attach_volume(s, nova_fixtures.CinderFixture.SWAP_OLD_VOL)
    return servers
