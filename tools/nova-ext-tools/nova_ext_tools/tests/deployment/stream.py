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
"""A seeded random stream of user actions, and the lists that follow each.

Every list request goes to the stock nova-api, then nova_ext's, then the
stock one again; nova_ext's answer differs when its body is byte for byte
neither stock answer.
"""

import itertools
import time

from openstack import exceptions as sdk_exc

PATHS = ('/servers', '/servers/detail')
USERS = ('admin', 'member1', 'reader1')
VERSIONS = ('2.1', '2.73', 'latest')
#: Every combination, rotated so that each comes back every few actions.
COMBINATIONS = list(itertools.product(PATHS, USERS, VERSIONS))

STABLE = ('ACTIVE', 'SHUTOFF', 'ERROR')


def first_difference(answer, stock, context=200):
    """Where nova_ext's answer departs from the stock one, in a line."""
    if answer[0] != stock[0]:
        return 'status %s, stock %s' % (answer[0], stock[0])
    a, b = answer[1], stock[1]
    at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y),
              min(len(a), len(b)))
    start = max(0, at - context)
    return 'byte %d: nova_ext ...%r... stock ...%r...' % (
        at, a[start:at + context], b[start:at + context])


class Lister(object):
    """Lists through both nova-apis as one user."""

    def __init__(self, nova_ext, stock):
        self.nova_ext, self.stock = nova_ext, stock
        #: Requests sent to nova_ext's nova-api.
        self.sent = 0

    @staticmethod
    def _get(conn, url, version):
        r = conn.compute.get(url, headers={
            'OpenStack-API-Version': 'compute %s' % version,
            'X-OpenStack-Nova-API-Version': version}, raise_exc=False)
        return r.status_code, r.content

    def compare(self, url, version, attempts=20):
        """(same, nova_ext's answer, stock before, stock after).

        nova_ext's answer is right when it is byte for byte one of the
        stock answers fetched right before and right after it. Where those
        two differ, the servers changed in between (a build moving through
        its task states) and nova_ext's answer may rightly be a third state
        between them: the three are fetched again, until the stock answers
        agree or ``attempts`` run out. Where they agree and nova_ext's does
        not, that is a difference.
        """
        for _ in range(attempts):
            before = self._get(self.stock, url, version)
            answer = self._get(self.nova_ext, url, version)
            self.sent += 1
            after = self._get(self.stock, url, version)
            if answer in (before, after):
                return True, answer, before, after
            if before == after:
                break
        return False, answer, before, after


class Stream(object):

    def __init__(self, rng, conns, resources, servers=30, archive=None):
        self.rng = rng
        #: Runs nova-manage db archive_deleted_rows, as an operator.
        self.archive = archive
        self.floating = {}          # server id -> floating IP
        #: Whether a server that does not settle is left alone (faults).
        self.tolerant = False
        self.groups = {}            # server id -> extra security group
        self.conns = conns          # user -> (nova_ext conn, stock conn)
        #: user -> the connections whose nova-apis act for that user,
        #: one drawn for each call; nova_ext's alone if none.
        self.writers = {}
        self.resources = resources
        self.target = servers
        self.servers = {}           # id -> owner
        self.comparisons = 0
        #: Requests sent to nova_ext's nova-api, retries included.
        self.sent = 0
        self.differences = []
        self.turn = 0
        self.actions = []

    # The lists.

    def check_lists(self, step, what, per_action=4):
        for _ in range(per_action):
            path, user, version = COMBINATIONS[
                self.turn % len(COMBINATIONS)]
            self.turn += 1
            url = path + ('?all_tenants=1' if user == 'admin' else '')
            lister = Lister(*self.conns[user])
            same, answer, before, after = lister.compare(url, version)
            self.sent += lister.sent
            self.comparisons += 1
            if not same:
                self.differences.append('%d %s: %s as %s at %s: %s' % (
                    step, what, url, user, version,
                    first_difference(answer, after)))

    # The actions.

    def _compute(self, owner):
        writers = self.writers.get(owner)
        if not writers:
            return self.conns[owner][0].compute
        return self.rng.choice(writers).compute

    def _network(self, owner):
        return self.conns[owner][0].network

    def _server(self, sid):
        owner = self.servers[sid]
        try:
            return owner, self._compute(owner).get_server(sid)
        except sdk_exc.NotFoundException:
            del self.servers[sid]
            return owner, None

    def settle(self, sid, timeout=60):
        """Wait until the server is in a stable state, or gone."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if sid not in self.servers:
                return None
            owner, server = self._server(sid)
            if server is None:
                return None
            if server.status in STABLE and not server.task_state:
                return server
            time.sleep(0.5)
        if self.tolerant:
            # Its build or action was lost to a fault, as Nova can lose
            # one: it is still listed and compared, no longer acted on.
            self.servers.pop(sid, None)
            return None
        raise AssertionError('server %s did not settle' % sid)

    def _private(self, owner):
        return self._network(owner).find_network('private-' + {
            'admin': 'admin', 'member1': 'project1',
            'member2': 'project2'}[owner])

    def create(self, owner=None, fail=False):
        owner = owner or self.rng.choice(['admin', 'member1', 'member2'])
        compute = self._compute(owner)
        net = self._private(owner)
        if self.rng.random() < 0.3:
            # A port the user made first, as Heat or Terraform do.
            port = self._network(owner).create_port(network_id=net.id)
            networks = [{'port': port.id}]
        else:
            networks = [{'uuid': net.id}]
        flavor = 'huge' if fail else self.rng.choice(['tiny', 'small'])
        server = compute.create_server(
            name='s-%d' % len(self.actions), image_id=self.resources['image'],
            flavor_id=compute.find_flavor(flavor).id, networks=networks,
            metadata={'n': str(self.rng.randrange(100))})
        self.servers[server.id] = owner
        return server.id

    def pick(self, status=STABLE):
        ids = sorted(self.servers)
        self.rng.shuffle(ids)
        for sid in ids:
            server = self.settle(sid)
            if server is not None and server.status in status:
                return server
        return None

    def act(self, step):
        """One random action; returns what it did."""
        if len(self.servers) < self.target and self.rng.random() < 0.5:
            return 'create', self.create()
        choices = ['delete', 'stop', 'start', 'reboot', 'lock', 'rename',
                   'metadata', 'tags', 'create', 'novalidhost', 'interface',
                   'floating_ip', 'security_group', 'rebuild_cell0',
                   'archive']
        what = self.rng.choice(choices)
        if what == 'create':
            return what, self.create()
        if what == 'novalidhost':
            return what, self.create(fail=True)
        if what == 'archive':
            self.archive()
            return what, None
        wanted = {'start': ('SHUTOFF',), 'stop': ('ACTIVE',),
                  'reboot': ('ACTIVE',), 'interface': ('ACTIVE',),
                  'floating_ip': ('ACTIVE', 'SHUTOFF'),
                  'security_group': ('ACTIVE', 'SHUTOFF'),
                  'rebuild_cell0': ('ERROR',)}.get(what, STABLE)
        server = self.pick(wanted)
        if server is None:
            return 'create', self.create()
        try:
            self._apply(what, server, step)
        except sdk_exc.ConflictException:
            # A locked server refuses its member (Nova's 409): an action
            # too, whose lists are compared all the same.
            what += ' (refused)'
        return what, server.id

    def _apply(self, what, server, step):
        owner = self.servers[server.id]
        compute = self._compute(owner)
        if what == 'delete':
            compute.delete_server(server.id)
            del self.servers[server.id]
            self.groups.pop(server.id, None)
            fip = self.floating.pop(server.id, None)
            if fip is not None:
                self._network(owner).delete_ip(fip)
        elif what == 'stop':
            compute.stop_server(server.id)
        elif what == 'start':
            compute.start_server(server.id)
        elif what == 'reboot':
            compute.reboot_server(server.id, 'SOFT')
        elif what == 'lock':
            if server.is_locked:
                compute.unlock_server(server.id)
            else:
                compute.lock_server(server.id,
                                    locked_reason='step %d' % step)
        elif what == 'rename':
            compute.update_server(server.id, name='r-%d' % step)
        elif what == 'metadata':
            compute.set_server_metadata(server.id, k=str(step))
        elif what == 'interface':
            self._interface(owner, server)
        elif what == 'floating_ip':
            self._floating_ip(owner, server)
        elif what == 'security_group':
            self._security_group(owner, server)
        elif what == 'rebuild_cell0':
            # A server whose build found no host is rebuilt from cell0 with
            # its UUID (nova_ext's cell0-rebuild handler).
            compute.rebuild_server(server.id, image=self.resources['image'])
        elif what == 'tags':
            compute.put('/servers/%s/tags/t%d' % (server.id, step % 7),
                        headers={'OpenStack-API-Version': 'compute 2.26'})

    def _interface(self, owner, server):
        compute = self._compute(owner)
        interfaces = list(compute.server_interfaces(server.id))
        if len(interfaces) > 1:
            compute.delete_server_interface(interfaces[-1].port_id,
                                            server=server.id)
        else:
            compute.create_server_interface(
                server.id, net_id=self._private(owner).id)

    def _floating_ip(self, owner, server):
        network = self._network(owner)
        fip = self.floating.pop(server.id, None)
        if fip is not None:
            network.delete_ip(fip)
            return
        ports = list(network.ports(device_id=server.id))
        if not ports:
            return
        public = network.find_network('public')
        self.floating[server.id] = network.create_ip(
            floating_network_id=public.id, port_id=ports[0].id)

    def _security_group(self, owner, server):
        compute = self._compute(owner)
        group = self.groups.pop(server.id, None)
        if group is not None:
            compute.remove_security_group_from_server(server.id, group)
            return
        network = self._network(owner)
        name = 'extra-' + owner
        group = network.find_security_group(name) or \
            network.create_security_group(name=name)
        compute.add_security_group_to_server(server.id, group)
        self.groups[server.id] = group

    def run(self, actions, faults=None):
        """Run ``actions`` random actions, each followed by its lists.

        With ``faults``, each of its faults is injected once, spread over
        the middle of the stream.
        """
        names = faults.names() if faults else []
        self.tolerant = bool(faults)
        at = {actions * (i + 1) // (len(names) + 1): name
              for i, name in enumerate(names)}
        for step in range(actions):
            if faults and step in at:
                faults.inject(at[step])
                self.check_lists(step, 'after ' + at[step])
            try:
                what, sid = self.act(step)
            except sdk_exc.HttpException as e:
                if not faults or (e.status_code or 500) < 500:
                    raise
                # A fault's moment: Nova's own API fails as well.
                what, sid = 'failed: %s' % e.status_code, None
            self.actions.append((what, sid))
            self.check_lists(step, what)
            if sid in self.servers:
                self.settle(sid, timeout=180 if faults else 60)
        if faults:
            faults.finish()
