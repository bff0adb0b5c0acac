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
"""nova-ext-indexer on a real RabbitMQ: nothing acknowledged is lost.

The indexer runs as operators run it, a process of its own reading a
nova.conf; notifications are published to the broker the way Nova's
``messagingv2`` driver does, on Nova's exchange and topic. The index's
pending table is where each recorded change must end up.
"""

import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import fixtures
from oslotest import base
import sqlalchemy as sa

from nova_ext.tests.functional import rabbit

PENDING = sa.table('nova_ext_index_pending', sa.column('uuid', sa.String))


def _payload(uuid_):
    return {'nova_object.name': 'InstanceActionPayload',
            'nova_object.namespace': 'nova',
            'nova_object.version': '1.9',
            'nova_object.data': {'uuid': uuid_, 'state': 'active'}}


def marked(engine):
    """The uuids the index's pending table holds."""
    with engine.connect() as conn:
        return {r.uuid for r in conn.execute(sa.select(PENDING.c.uuid))}


def nova_notifier(test, url):
    """A notifier that publishes as Nova does: exchange "nova", messagingv2.

    Its transport is cleaned up with ``test``.
    """
    return rabbit.notifier(test, url, 'nova', 'nova-compute:test',
                           'versioned_notifications')


class TestIndexer(rabbit.SharedBroker, base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.index_url = 'sqlite:///%s' % os.path.join(self.dir, 'i.sqlite')
        self.conf_file = os.path.join(self.dir, 'nova.conf')
        with open(self.conf_file, 'w') as f:
            f.write('[DEFAULT]\nstate_path = %s\ntransport_url = %s\n'
                    '[oslo_messaging_notifications]\ntransport_url = %s\n'
                    '[nova_ext_index]\nconnection = %s\n'
                    % (self.dir, self.url, self.url, self.index_url))
        self._run('nova-ext-manage', 'index', 'db_sync')
        self.engine = sa.create_engine(self.index_url)
        self.addCleanup(self.engine.dispose)
        self.notifier = self._notifier()
        self.indexer = None
        self.addCleanup(self._kill_indexer)

    def _bin(self, name):
        return os.path.join(os.path.dirname(sys.executable), name)

    def _run(self, name, *args):
        subprocess.run([self._bin(name), '--config-file', self.conf_file]
                       + list(args), check=True, capture_output=True)

    def _notifier(self):
        return nova_notifier(self, self.url)

    def _start_indexer(self):
        log = os.path.join(self.dir, 'indexer-%s.log' % uuid.uuid4().hex[:6])
        self.indexer_log = log
        self.indexer = subprocess.Popen(
            [self._bin('nova-ext-indexer'), '--config-file', self.conf_file,
             '--no-worker'], stdout=open(log, 'w'), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while 'listening on' not in open(log).read():
            self.assertIsNone(self.indexer.poll(), open(log).read()[-2000:])
            self.assertLess(time.monotonic(), deadline, 'indexer not ready')
            time.sleep(0.1)

    def _kill_indexer(self, sig=signal.SIGKILL):
        if self.indexer is not None and self.indexer.poll() is None:
            self.indexer.send_signal(sig)
            self.indexer.wait(30)

    def _publish(self, uuids, event_type='instance.update', pause=0.0):
        for n, u in enumerate(uuids, 1):
            self.notifier.info({}, event_type, _payload(u))
            if pause and not n % 100:
                time.sleep(pause)

    def _marked(self):
        return marked(self.engine)

    def _wait_marked(self, wanted, timeout=90):
        deadline = time.monotonic() + timeout
        while not wanted <= self._marked():
            if time.monotonic() > deadline:
                self.fail('%d of %d changes never recorded; indexer log:\n%s'
                          % (len(wanted - self._marked()), len(wanted),
                             open(self.indexer_log).read()[-3000:]))
            time.sleep(0.2)

    def test_killed_mid_stream_loses_nothing(self):
        self._start_indexer()
        uuids = [str(uuid.uuid4()) for _ in range(1500)]
        # Paced (at least 1.5 s in all), so that the kill falls within the
        # stream however loaded the machine is.
        publisher = threading.Thread(target=self._publish, args=(uuids,),
                                     kwargs={'pause': 0.1})
        started = time.monotonic()
        publisher.start()
        while len(self._marked()) < 200:
            self.assertLess(time.monotonic() - started, 60)
            time.sleep(0.05)
        self._kill_indexer()
        killed_at = len(self._marked())
        publisher.join()
        self.assertLess(killed_at, len(uuids), 'killed too late to matter')
        self._start_indexer()
        self._wait_marked(set(uuids))
        # Other notifications are acknowledged and ignored.
        self._publish(['not-an-instance'], event_type='service.update')
        self._kill_indexer(signal.SIGTERM)
        self.assertEqual(0, self.indexer.returncode)
        self.assertEqual(set(uuids), self._marked())

    def test_index_unwritable_requeues_until_it_is_back(self):
        self._start_indexer()
        with self.engine.begin() as conn:
            conn.execute(sa.text('ALTER TABLE nova_ext_index_pending '
                                 'RENAME TO pending_away'))
        uuids = [str(uuid.uuid4()) for _ in range(50)]
        self._publish(uuids)
        deadline = time.monotonic() + 30
        while 'requeued until it can' not in open(self.indexer_log).read():
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.1)
        with self.engine.begin() as conn:
            conn.execute(sa.text('ALTER TABLE pending_away '
                                 'RENAME TO nova_ext_index_pending'))
        self._wait_marked(set(uuids))
        self.assertIn('records changes again', open(self.indexer_log).read())
