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
"""Faults in the middle of a differential change stream, in the real cloud.

It runs after the install guide's checks and the plain stream (test
modules run in the order of their names), which each want a cloud no fault
has touched.

A cell conductor and a nova-api worker killed with SIGKILL, the index
database user without its grants for 30 s (its sessions ended), MariaDB
restarted, RabbitMQ restarted: lists stay Nova's answers throughout (no
500 of nova_ext's own: a status the stock nova-api did not give is a
difference), and afterwards the index has lost nothing (``nova-ext-manage
index verify``) and no killed process is left a holder of the index's
marks.
``NOVA_EXT_FAULT_ACTIONS`` sets the stream's length.

And an archive (``nova-manage db archive_deleted_rows``) run while the
index database user has no grants: the command exits right after its
writes, so it waits at its exit for the index to take them, and once the
grants are back the index has lost nothing. So does a cell conductor
stopped (SIGTERM) while the grants are gone, with the changes of a server
it wrote meanwhile: oslo.service leaves by ``os._exit`` once the service
has stopped, and the conductor waits for the index before that. And
nova_ext's nova-api, stopped as DevStack stops it (SIGTERM to uwsgi's
master, which ends each worker gracefully) right after a rename it wrote
while the grants were gone: the worker waits at its exit.

And a rename whose mark the index refused while it read as before (its
sequence table locked by another session): every list of nova_ext's
nova-api right after it, whichever worker answers, is Nova's answer, and
none is served from the index until the rename is recorded.
"""

import os
import subprocess
import time

from nova_ext_tools.cloud import procs
from nova_ext_tools.cloud import services
from nova_ext_tools.tests.deployment import base
from nova_ext_tools.tests.deployment import faults
from nova_ext_tools.tests.deployment import stream
from nova_ext_tools.tests.deployment import test_stream


#: Seconds within which each process that held changes while the index
#: could not take them has recorded them and vouched again: its next
#: heartbeat (2 s), and two readings of the holders by each nova-api
#: worker (0.5 s each); lists are Nova's until then. Twice that: the
#: heartbeats' threads wait for a core where the other test jobs share
#: the machine.
VOUCHED = 8

#: What a process says once it waits at its exit for the index.
WAITING = 'not recorded in the index; waiting up to'

#: Seconds the index database user is without its grants at most, when
#: they are back once a process waits at its exit: the whole test fails
#: if none does.
REVOKED = 180


def saying(log, start, words):
    """Whether ``log`` says ``words`` from ``start``, when called."""
    def said():
        with open(log) as f:
            f.seek(start)
            return words in f.read()
    return said


class TestFaults(base.CloudTestCase):

    def verified(self, seconds):
        """``nova-ext-manage index verify``, once it passes or times out.

        The index catches up within ``max_lag``.
        """
        deadline = time.monotonic() + seconds
        while True:
            done = self.cloud.ext.command('nova-ext-manage', 'index',
                                          'verify', check=False)
            if done.returncode == 0 or time.monotonic() > deadline:
                return done
            time.sleep(5)

    def booted(self, conn, name):
        """A new server of the admin's, once ACTIVE."""
        server = conn.compute.create_server(
            name=name, image_id=self.resources['image'],
            flavor_id=conn.compute.find_flavor('tiny').id,
            networks=[{'uuid': conn.network.find_network(
                'private-admin').id}])
        return conn.compute.wait_for_server(server, wait=180)

    def assertServed(self, lister, counted, urls, absent=None):
        """Each list is Nova's, without ``absent``, served by the index.

        Compared once every holder of marks vouches again, without waiting
        for the index otherwise: the catch-up of each list applies what
        was recorded.
        """
        time.sleep(VOUCHED)
        for url in urls:
            same, answer, _before, after = lister.compare(url, 'latest')
            self.assertTrue(same, '%s: %s' % (url, stream.first_difference(
                answer, after)))
            if absent is not None:
                self.assertNotIn(absent.encode(), answer[1])
        now = test_stream.accounted_for(self, lister, counted)
        self.assertEqual(lister.sent, now['served'] - counted.get(
            'served', 0), 'served by the index, of %d: %s, before %s'
            % (lister.sent, now, counted))

    def waited_at_its_exit(self, log, start):
        """What ``log`` says from ``start``, once a process stopped.

        It could not record a change while the grants were gone, waited
        for the index at its exit and recorded it.
        """
        with open(log) as f:
            f.seek(start)
            said = f.read()
        self.assertIn('cannot hold the marks of', said)
        self.assertIn(WAITING + ' 30 s', said)
        self.assertIn('changes recorded; exiting', said)
        self.assertNotIn('not recorded in the index (', said)
        return said

    def dead_holders(self, injected, seconds):
        """``{pid: host}`` of the holder rows of processes that are gone.

        Once there are none, or ``seconds`` later. Each is released once
        the processes that watch the holders (nova-apis that list,
        indexers) have seen it not beat for ``holder_timeout``.
        """
        lister = stream.Lister(self.connect(), self.connect(stock=True))
        deadline = time.monotonic() + seconds
        while True:
            dead = {pid: host for pid, host in injected.holders().items()
                    if not procs.alive(pid)}
            if not dead or time.monotonic() > deadline:
                return dead
            lister.compare('/servers?all_tenants=1', 'latest')
            time.sleep(2)

    def test_an_archive_while_the_index_is_away(self):
        conn = self.connect()
        server = self.booted(conn, 'archived')
        conn.compute.delete_server(server.id)
        conn.compute.wait_for_delete(server, wait=180)
        lister = stream.Lister(conn, self.connect(stock=True))
        counted = test_stream.counters_before(self)
        # Back once nova-manage waits at its exit for up to max_lag (30 s).
        log = self.cloud.ps.log('nova-manage-archive')
        with open(log, 'a') as f:
            start = f.tell()
        injected = faults.Faults(self.cloud, revoke_seconds=REVOKED)
        self.addCleanup(injected.finish)
        injected.revoke_index_grants(until=saying(log, start, WAITING))
        with open(log, 'a') as f:
            done = subprocess.run([
                services.venv_bin('nova-manage'), '--config-file',
                self.cloud.nova.conf, 'db', 'archive_deleted_rows',
                '--all-cells', '--until-complete'], stdout=subprocess.PIPE,
                stderr=f, text=True)
        # 1: rows were archived.
        self.assertEqual(1, done.returncode, '%s\n(its stderr: %s)' % (
            done.stdout[-3000:], log))
        self.waited_at_its_exit(log, start)
        # Right after it: what nova-manage recorded at its exit.
        self.assertServed(lister, counted, (
            '/servers/detail?all_tenants=1&deleted=True',
            '/servers?all_tenants=1&deleted=True',
            '/servers/detail?all_tenants=1'), absent=server.id)
        done = self.verified(60)
        self.assertEqual(0, done.returncode, done.stdout + done.stderr)

    def test_a_conductor_stopped_while_the_index_is_away(self):
        conn = self.connect()
        server = self.booted(conn, 'stopped')
        # Its cell's conductor writes what its compute reports.
        conductor = 'nova-conductor-' + server.compute_host.split('-')[-1]
        log = self.cloud.ps.log(conductor)
        start = os.path.getsize(log)
        lister = stream.Lister(conn, self.connect(stock=True))
        counted = test_stream.counters_before(self)
        # Back once the conductor waits at its stop for up to max_lag
        # (30 s); the cloud's stop sends SIGKILL after 30 s.
        injected = faults.Faults(self.cloud, revoke_seconds=REVOKED)
        self.addCleanup(injected.finish)
        injected.revoke_index_grants(until=saying(log, start, WAITING))
        conn.compute.stop_server(server)
        conn.compute.wait_for_server(server, status='SHUTOFF', wait=120)
        # SIGTERM: oslo.service stops the service, then leaves by os._exit.
        self.cloud.nova.restart(conductor)
        said = self.waited_at_its_exit(log, start)
        self.assertIn('service graceful shutdown finished', said)
        self.assertServed(lister, counted, (
            '/servers/detail?all_tenants=1', '/servers?all_tenants=1'))
        done = self.verified(60)
        self.assertEqual(0, done.returncode, done.stdout + done.stderr)

    def test_a_write_the_index_refused_listed_by_every_worker(self):
        """A rename whose mark the index refused, listed at once.

        The index reads as before; only the worker that wrote knows that
        its mark was refused, and keeps the change in memory. The other
        workers of nova_ext's nova-api list from the index only while
        every holder beats, and that worker beats again only once the
        change is recorded: each list right after the rename is Nova's
        answer, from Nova's path, until it is recorded, and then from the
        index.
        """
        conn = self.connect()
        server = self.booted(conn, 'refused')
        log = self.cloud.ps.log('nova-api')
        start = os.path.getsize(log)
        lister = stream.Lister(conn, self.connect(stock=True))
        counted = test_stream.counters_before(self)
        urls = ('/servers/detail?all_tenants=1', '/servers?all_tenants=1',
                '/servers?all_tenants=1&name=refused-renamed')
        injected = faults.Faults(self.cloud)
        with injected.marks_refused():
            began = time.monotonic()
            conn.compute.update_server(server, name='refused-renamed')
            took = time.monotonic() - began
            # Every worker in turn, as uWSGI hands them the requests; a
            # list of the worker that holds the rename waits query_timeout
            # for it. All within max_lag (30 s), past which that worker
            # leaves the index off for retry_interval.
            for _ in range(2):
                for url in urls:
                    same, answer, _before, after = lister.compare(
                        url, 'latest')
                    self.assertTrue(same, '%s: %s' % (
                        url, stream.first_difference(answer, after)))
        print('rename whose mark was refused: %.2f s; %d lists compared'
              % (took, lister.sent))
        now = test_stream.accounted_for(self, lister, counted)
        handed = {k: now.get(k, 0) - counted.get(k, 0) for k in now
                  if ':' in k and now.get(k, 0) > counted.get(k, 0)}
        # None served from the index without the rename: each handed to
        # Nova, by the worker that holds it or by one that saw it silent.
        self.assertEqual(0, now.get('served', 0) - counted.get('served', 0),
                         handed)
        self.assertTrue(any('have not shown' in k for k in handed), handed)
        with open(log) as f:
            f.seek(start)
            said = f.read()
        self.assertIn('cannot hold the marks of', said)
        self.assertIn('for the other processes to stop listing', said)
        lister = stream.Lister(conn, self.connect(stock=True))
        self.assertServed(lister, test_stream.counters_before(self), urls)
        done = self.verified(60)
        self.assertEqual(0, done.returncode, done.stdout + done.stderr)

    def test_a_nova_api_stopped_while_the_index_is_away(self):
        conn = self.connect()
        server = self.booted(conn, 'renamed')
        log = self.cloud.ps.log('nova-api')
        start = os.path.getsize(log)
        # Back once the worker with the rename waits at its exit.
        injected = faults.Faults(self.cloud, revoke_seconds=REVOKED)
        self.addCleanup(injected.finish)
        injected.revoke_index_grants(until=saying(log, start, WAITING))
        # Written by the nova-api worker that takes the request.
        conn.compute.update_server(server, name='renamed-while-away')
        # SIGTERM to uwsgi's master: each worker ends gracefully, and the
        # one with the rename waits for the index at its exit.
        self.cloud.nova.restart('nova-api')
        said = self.waited_at_its_exit(log, start)
        self.assertIn('Gracefully killing worker', said)
        self.assertNotIn('NO MERCY', said)
        procs.wait_for('nova-api', lambda: procs.http_up(
            self.lay.url('nova')), 180, self.cloud.ps, 'nova-api')
        # A worker without changes leaves at once: if the grants were still
        # gone, its holder row stays, and lists are Nova's until the
        # watchers release it.
        self.assertEqual({}, self.dead_holders(injected, 120),
                         'holder rows of dead processes')
        lister = stream.Lister(conn, self.connect(stock=True))
        counted = test_stream.counters_before(self)
        self.assertServed(lister, counted, (
            '/servers/detail?all_tenants=1', '/servers?all_tenants=1',
            '/servers?all_tenants=1&name=renamed-while-away'))
        done = self.verified(60)
        self.assertEqual(0, done.returncode, done.stdout + done.stderr)

    def test_faults_in_a_stream(self):
        seed, actions, s = test_stream.new_stream(
            self, 'NOVA_EXT_FAULT_ACTIONS', 60)
        injected = faults.Faults(self.cloud)
        self.addCleanup(injected.finish)
        started = time.monotonic()
        try:
            s.run(actions, faults=injected)
        finally:
            print('fault stream seed %d: %d actions, %d comparisons, %d '
                  'differences, faults %s, %.0f s' % (
                      seed, len(s.actions), s.comparisons,
                      len(s.differences), injected.done,
                      time.monotonic() - started))
        self.assertEqual(injected.names(), injected.done)
        self.assertEqual([], s.differences[:5], 'seed %d: %d differences'
                         % (seed, len(s.differences)))
        # Nothing lost, once the index has caught up (max_lag).
        done = self.verified(120)
        self.assertEqual(0, done.returncode, done.stdout + done.stderr)
        # Processes killed with SIGKILL left their holder rows; watching
        # nova-apis and indexers release them by their beats.
        self.assertEqual({}, self.dead_holders(injected, 120),
                         'holder rows of dead processes')
        print('holders after the faults: %s (killed: %s)'
              % (sorted(injected.holders()), injected.killed))
        # What operators are told after the faults: whether nova-api lists
        # from the index, by the rules it applies to each list.
        done = self.cloud.ext.command('nova-ext-manage', 'index', 'status',
                                      check=False)
        print('index status after the faults (exit %d):\n%s'
              % (done.returncode, done.stdout))
