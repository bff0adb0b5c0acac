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
"""A seeded random stream of changes, each listed at once.

A few hundred actions over a few dozen servers in two cells (create,
delete, stop, start, reboot, lock with a reason, rename, metadata, tags,
interfaces, volumes and a failed attach, Neutron's port events after the
port changed, a refused console request on an ERROR server, builds that
find no host, archiving), with RPC casts left asynchronous, each made
with Nova's clock behind or ahead by up to 10 s or on time, drawn at
random (the hosts of a cloud do not agree on the time, and Nova stamps
``updated_at`` with the writer's). Right after each action, without
waiting for anything, a sample of list requests is answered by the index
and by Nova, and compared byte for byte.

Nova's answer may change while the index answers (a cast is still at
work), so each comparison takes Nova's answer before and after the
index's, and counts the writes Nova's databases saw meanwhile: the index
must give one of the two, and when nothing was written, exactly Nova's.
When something was, and the index gave neither, the comparison is asked
again (two answers of Nova's that agree do not prove that nothing changed
between them: a build request gone, and its instance's first update not
yet made). At least 90% of the answers must have been served by the
index. The seed is printed on failure; ``NOVA_EXT_STREAM_SEED`` replays
it.
"""

import collections
import copy
import os
import random
import time

from nova.cmd import manage
from nova.db.main import models
from oslo_db import exception as db_exc
from oslo_serialization import jsonutils
from oslo_utils import timeutils
import sqlalchemy as sa

from nova_ext.index.marks import pending
from nova_ext.index import schema
from nova_ext.seams import api as api_entry_point
from nova_ext.tests.functional import answers
from nova_ext.tests.functional import fixtures as ext_fixtures
from nova_ext.tests.functional import test_index_capture as capture_tests
from nova_ext.tests.functional import test_index_parity as parity

#: Microversions whose views differ in what a list shows.
MICROVERSIONS = capture_tests.MICROVERSIONS


class Stream(object):
    """The actions, each given one server and the random generator."""

    def __init__(self, test, rng):
        self.test = test
        self.rng = rng
        self.servers = []
        self.ports = {}

    def run(self, name):
        server = self.rng.choice(self.servers) if self.servers else None
        getattr(self, name)(server)

    def _post(self, server, body, api=None):
        (api or self.test.api).api_post(
            '/servers/%s/action' % server['id'], body,
            check_response_status=[])

    # Each action may be refused by Nova (a 409 while a server is busy):
    # the stream goes on, and what Nova did or did not do is compared.

    def _boot(self, name, flavor_id=None, host=None):
        api = self.test.admin_api
        # Booting on a named host takes 2.74.
        api.microversion = 'latest'
        body = self.test._build_server(name=name, flavor_id=flavor_id or '1',
                                       networks='none', host=host)
        created = api.post_server({'server': body})
        self.servers.append(created)
        return created

    def create(self, server=None):
        n = len(self.servers)
        self._boot('s-%d' % n, host='compute%d-1' % (n % 2 + 1))

    def no_valid_host(self, server):
        self._boot('huge-%d' % len(self.servers), flavor_id=self.test.huge)

    def delete(self, server):
        self.test.api.api_delete('/servers/%s' % server['id'],
                                 check_response_status=[])
        self.servers.remove(server)

    def stop(self, server):
        self._post(server, {'os-stop': None})

    def start(self, server):
        self._post(server, {'os-start': None})

    def reboot(self, server):
        self._post(server, {'reboot': {'type': 'SOFT'}})

    def lock(self, server):
        self._post(server, {'lock': {'locked_reason': 'r%d' %
                                     self.rng.randrange(100)}})

    def unlock(self, server):
        self._post(server, {'unlock': None})

    def rename(self, server):
        self.test.api.api_put(
            '/servers/%s' % server['id'],
            {'server': {'name': 'n-%d' % self.rng.randrange(1000)}},
            check_response_status=[])

    def metadata(self, server):
        self.test.api.api_post(
            '/servers/%s/metadata' % server['id'],
            {'metadata': {'k%d' % self.rng.randrange(3): 'v'}},
            check_response_status=[])

    def tags(self, server):
        tags = self.rng.sample(['red', 'green', 'blue'], self.rng.randrange(3))
        self.test.api.api_put('/servers/%s/tags' % server['id'],
                              {'tags': tags}, check_response_status=[])

    def attach_interface(self, server):
        port = copy.deepcopy(self.test.neutron.port_1)
        n = len(self.ports) + 10
        port.update(id='00000000-0000-4000-8000-%012d' % n, device_id='',
                    mac_address='fa:16:3e:00:00:%02x' % n,
                    fixed_ips=[{'ip_address': '192.168.1.%d' % n,
                                'subnet_id': port['fixed_ips'][0][
                                    'subnet_id']}])
        self.test.neutron._ports[port['id']] = port
        self.ports[port['id']] = server['id']
        self.test.api.api_post(
            '/servers/%s/os-interface' % server['id'],
            {'interfaceAttachment': {'port_id': port['id']}},
            check_response_status=[])

    def _port_of(self, server):
        ports = [p for p, s in self.ports.items()
                 if s == server['id'] and p in self.test.neutron._ports]
        return self.rng.choice(ports) if ports else None

    def detach_interface(self, server):
        port = self._port_of(server)
        if port is not None:
            self.test.api.api_delete(
                '/servers/%s/os-interface/%s' % (server['id'], port),
                check_response_status=[])

    def network_changed(self, server):
        port = self._port_of(server)
        if port is None:
            return
        fixed = self.test.neutron._ports[port]['fixed_ips'][0]
        fixed['ip_address'] = '10.0.%d.%d' % (self.rng.randrange(1, 9),
                                              self.rng.randrange(2, 250))
        self.test.floating[port] = '172.24.4.%d' % self.rng.randrange(2, 250)
        self._event(server, 'network-changed', port)

    def network_vif_deleted(self, server):
        port = self._port_of(server)
        if port is not None:
            self.test.neutron.delete_port(port)
            self._event(server, 'network-vif-deleted', port)

    def _event(self, server, name, tag):
        self.test.admin_api.api_post('/os-server-external-events', {
            'events': [{'name': name, 'server_uuid': server['id'],
                        'tag': tag}]}, check_response_status=[])

    def attach_volume(self, server):
        volume = '%08x-0000-4000-8000-000000000000' % self.rng.randrange(
            2 ** 32)
        self.test.api.api_post(
            '/servers/%s/os-volume_attachments' % server['id'],
            {'volumeAttachment': {'volumeId': volume}},
            check_response_status=[])

    def failed_volume_attach(self, server):
        self.test.failing_attach = True
        self.attach_volume(server)

    def console_on_error(self, server):
        self._post(server, {'os-resetState': {'state': 'error'}},
                   api=self.test.admin_api)
        self._post(server, {'os-getVNCConsole': {'type': 'novnc'}})

    def archive(self, server):
        try:
            manage.DbCommands().archive_deleted_rows(max_rows=1000)
        except db_exc.DBDuplicateEntry:
            # Nova's own: archiving again a row id SQLite gave anew after
            # an earlier archive collides in its shadow table. Lists are
            # compared with whatever Nova archived.
            pass


#: Actions and their weights.
ACTIONS = (('create', 6), ('delete', 4), ('stop', 5), ('start', 5),
           ('reboot', 3), ('lock', 4), ('unlock', 3), ('rename', 5),
           ('metadata', 5), ('tags', 5), ('attach_interface', 5),
           ('detach_interface', 3), ('network_changed', 6),
           ('network_vif_deleted', 3), ('attach_volume', 3),
           ('failed_volume_attach', 2), ('console_on_error', 2),
           ('no_valid_host', 2), ('archive', 1))


class _ChangeStream(object):
    """Mixed into a capture test case: the stream, and its comparisons."""

    CAST_AS_CALL = False
    # Minutes, where a test of its own takes seconds: OS_TEST_TIMEOUT times
    # this.
    TIMEOUT_SCALING_FACTOR = 3
    SERVERS = 20
    STEPS = 40
    #: List requests compared after each action, drawn from every
    #: combination of caller, microversion, path and filter.
    SAMPLE = 3
    #: Comparisons of one request at most, while Nova writes meanwhile.
    ATTEMPTS = 50
    #: Seconds Nova's clock is off while an action is made, drawn for each:
    #: the clock of a host behind or ahead of the others', or none.
    CLOCKS = (0, 0, 0, 0, -10, -5, -3, -1, 1, 3, 10)

    def _setup_services(self):
        # Room for every server of the stream on the fake computes.
        self.flags(cpu_allocation_ratio=64, ram_allocation_ratio=64,
                   disk_allocation_ratio=64)
        super()._setup_services()

    def setUp(self):
        super().setUp()
        self.flags(enabled=False, group='vnc')
        self.flags(instances=-1, cores=-1, ram=-1, group='quota')
        self.huge = self._create_flavor(memory_mb=512, vcpu=10, disk=1)
        self.floating = {}
        self.failing_attach = False
        self.stub_out(self.neutron.__module__ + '.NeutronFixture.'
                      'list_floatingips', self._floating_ips)
        driver = type(self.computes['compute1-1'].manager.driver)
        real_attach = driver.attach_volume

        def attach_volume(driver, *args, **kwargs):
            if self.failing_attach:
                self.failing_attach = False
                raise RuntimeError('attach failed, as the test asked')
            return real_attach(driver, *args, **kwargs)
        self.stub_out('%s.%s.attach_volume' % (driver.__module__,
                                               driver.__name__),
                      attach_volume)
        self.started = timeutils.utcnow().strftime('%Y-%m-%dT%H:%M:%SZ')
        self.writes = self.useFixture(ext_fixtures.NovaWrites(
            self.index.connection[len('sqlite:///'):]))
        self.answers = self.served = 0
        #: Why the counted answers the index did not serve went to Nova.
        self.handed = collections.Counter()

    def _floating_ips(self, _fixture, retrieve_all=True, **params):
        port = params.get('port_id')
        if port not in self.floating or port not in self.neutron._ports:
            return {'floatingips': []}
        fixed = self.neutron._ports[port]['fixed_ips'][0]['ip_address']
        return {'floatingips': [{
            'id': 'fip-' + port, 'port_id': port,
            'floating_ip_address': self.floating[port],
            'fixed_ip_address': fixed}]}

    def queries(self):
        queries = []
        for api in (self.admin_api, self.api):
            for version in MICROVERSIONS:
                for path in ('servers', 'servers/detail'):
                    for query in ('', 'ip=192.168', 'ip=10.0',
                                  'changes-since=%s' % self.started):
                        if api is self.admin_api:
                            query = 'all_tenants=1&deleted=true&' + query
                        queries.append((api, version, path + '?' + query))
        return queries

    def test_change_stream(self):
        seed = int(os.environ.get('NOVA_EXT_STREAM_SEED') or
                   random.SystemRandom().randrange(2 ** 32))
        self.at = 'the servers built'
        try:
            self._stream(random.Random(seed))
        except Exception as e:
            # Whatever failed (an API error too), the seed replays it; what
            # a service raised meanwhile comes first, where a truncated
            # report still shows it.
            raise AssertionError('change stream seed %d (replay with '
                                 'NOVA_EXT_STREAM_SEED=%d), at %s; %s: '
                                 '%s: %s' % (seed, seed, self.at,
                                             self._raised(),
                                             type(e).__name__, e)) from e

    def _raised(self):
        """The last exceptions the services logged with a traceback."""
        raised, within = [], False
        for line in self.stdlog.logger.output.splitlines():
            if line.startswith('Traceback (most recent call last'):
                within = True
            elif within and line[:1] not in (' ', '\t', ''):
                raised.append(line[:300])
                within = False
        return 'raised: %s' % (' | '.join(raised[-3:]) or 'nothing')

    def _stream(self, rng):
        stream = Stream(self, rng)
        # Built side by side, as a cloud builds them; the stream starts
        # once all are ACTIVE, which may take a while on a busy machine.
        for _ in range(self.SERVERS):
            stream.create()
        for server in list(stream.servers):
            self._wait_for_state_change(server, 'ACTIVE', max_retries=60)
        names = [name for name, weight in ACTIONS for _ in range(weight)]
        queries = self.queries()
        for step in range(self.STEPS):
            self.before_step(step)
            name = rng.choice(names) if stream.servers else 'create'
            self.at = 'step %d (%s)' % (step, name)
            with ext_fixtures.SkewedClock(rng.choice(self.CLOCKS)):
                stream.run(name)
            for api, version, uri in rng.sample(queries, self.SAMPLE):
                api.microversion = version
                self.assertSameNow(api, uri, '%d %s' % (step, name),
                                   counted=self.counted(step))
        self.at = 'the end of the stream'
        self.assertGreaterEqual(self.served, 0.9 * self.answers,
                                '%d of %d answers served by the index; '
                                'the others handed to Nova for: %s'
                                % (self.served, self.answers,
                                   dict(self.handed)))

    def before_step(self, step):
        """What happens to the index before an action."""

    def counted(self, step):
        """Whether the answers after an action count in the served share."""
        return True

    def assertSameNow(self, api, uri, step, counted=True):
        """The index's answer is Nova's, at a moment while it answered."""
        for _attempt in range(self.ATTEMPTS):
            writes = self.writes.count
            with api_entry_point.stock_instance_list():
                before = answers.get(self._get, api, uri)
            counts = self.selector.stats.snapshot()
            got = answers.get(self._get, api, uri)
            stats = self.selector.stats.snapshot()
            served = stats['served'] - counts['served']
            with api_entry_point.stock_instance_list():
                after = answers.get(self._get, api, uri)
            want_now, got_now = answers.same_moment(before, got)
            if want_now != got_now:
                want_now, got_now = answers.same_moment(after, got)
            if want_now == got_now:
                if counted:
                    self.answers += 1
                    self.served += served
                    if not served:
                        self.handed[stats['last_reason']] += 1
                return
            if writes == self.writes.count:
                # Nothing was written while the three answered: Nova's
                # answer was the same throughout, and the index's is not.
                break
            time.sleep(0.05)
        else:
            self.fail('step %s: Nova kept changing while %s was compared '
                      '%d times' % (step, uri, self.ATTEMPTS))
        after, got = after.text, got.text
        difference = ext_fixtures.first_difference(_loads(after),
                                                   _loads(got))
        self.fail('step %s: index and Nova differ on %s as %s (%s): '
                  'status %s vs %s; %s\nNova: %s\nindex: %s\n%s'
                  % (step, uri, api.auth_user, api.microversion,
                     got_now[0], want_now[0], difference,
                     _around(after, difference), _around(got, difference),
                     self._held(after, got, difference)))

    def _held(self, want, got, difference):
        """What the index holds of the servers the answers differ on.

        Those only one answer shows, and the one the first difference is
        in.
        """
        ids = [{s['id'] for s in _loads(text).get('servers', [])}
               if text.startswith('{') else set() for text in (want, got)]
        uuids = set(ids[0] ^ ids[1])
        server = _loads(_around(want, difference))
        if isinstance(server, dict) and 'id' in server:
            uuids.add(server['id'])
        uuids = sorted(uuids)
        if not uuids:
            return ''
        bdms = models.BlockDeviceMapping.__table__
        with self.index.engine.connect() as conn:
            volumes = [(r.instance_uuid, r.volume_id, r.deleted)
                       for r in conn.execute(sa.select(bdms).where(
                           bdms.c.instance_uuid.in_(uuids)))]
        book = schema.INSTANCES
        with self.index.engine.connect() as conn:
            held = [dict(r._mapping) for r in conn.execute(
                sa.select(book).where(book.c.uuid.in_(uuids)))]
        marks = pending.take(self.index.engine, 1000)
        return ('servers: %s; index book: %s; pending: %s; index volumes: '
                '%s' % (uuids, held, {u: marks.get(u) for u in uuids},
                        volumes))


def _around(text, difference):
    """The server of a body that ``difference`` points into."""
    body = _loads(text)
    if difference and difference.startswith('/servers[') and isinstance(
            body, dict):
        index = int(difference[len('/servers['):].split(']')[0])
        servers = body.get('servers', [])
        if index < len(servers):
            return jsonutils.dumps(servers[index])
    return text[:2000]


def _loads(text):
    try:
        return jsonutils.loads(text)
    except ValueError:
        return text


class TestChangeStreamRenderCache(_ChangeStream,
                                  capture_tests._CaptureBase):
    """Through fast_render and the render cache."""


class TestChangeStreamFastRender(_ChangeStream,
                                 capture_tests._CaptureBase):
    """Through fast_render, without the render cache."""

    NOVA_EXT_OPTIONS = dict(parity.FAST_OPTIONS,
                            nova_ext_index=capture_tests.CAPTURE)
    STEPS = 35


class TestChangeStreamIndex(_ChangeStream, capture_tests._CaptureBase):
    """Through the index driver alone, Nova rendering."""

    NOVA_EXT_OPTIONS = dict(parity.IndexTestCase.NOVA_EXT_OPTIONS,
                            nova_ext_index=capture_tests.CAPTURE)
    FAST_RENDER = False
    STEPS = 35
