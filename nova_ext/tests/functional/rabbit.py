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
"""A throwaway RabbitMQ broker for the message-bus tests.

Started by the test on 127.0.0.1 with free ports (its own Erlang port
mapper's too), its node name, cookie (HOME), database and logs in a
temporary directory, and stopped and removed at the end.
``rabbitmq-server`` comes from Debian's package, which
``tools/test-packages`` installs before the functional tests.
"""

import os
import shutil
import subprocess
import tempfile
import uuid

from oslo_config import cfg
import oslo_messaging

from nova_ext.tests.functional import sqlserver


class RabbitMQ(object):

    def __init__(self):
        # Debian's /usr/sbin wrappers switch to the rabbitmq user, who
        # cannot use this test's directory; the scripts behind them do not.
        self.bin = '/usr/lib/rabbitmq/bin'
        if not os.path.exists(os.path.join(self.bin, 'rabbitmq-server')):
            raise sqlserver.ServerUnavailable(
                'RabbitMQ is not installed; tools/test-packages installs it '
                '(Debian package rabbitmq-server)')
        self.dir = tempfile.mkdtemp(prefix='nova-ext-rabbit-')
        self.port = sqlserver._free_port()
        self.node = 'nova-ext-%s@localhost' % uuid.uuid4().hex[:8]
        self.env = dict(
            os.environ,
            PATH=self.bin + ':' + os.environ.get('PATH', ''),
            HOME=self.dir,
            # Erlang's port mapper: this broker's own, on 127.0.0.1 only,
            # stopped with it.
            ERL_EPMD_ADDRESS='127.0.0.1',
            ERL_EPMD_PORT=str(sqlserver._free_port()),
            RABBITMQ_NODENAME=self.node,
            RABBITMQ_NODE_IP_ADDRESS='127.0.0.1',
            RABBITMQ_NODE_PORT=str(self.port),
            RABBITMQ_DIST_PORT=str(sqlserver._free_port()),
            RABBITMQ_MNESIA_BASE=os.path.join(self.dir, 'mnesia'),
            RABBITMQ_LOG_BASE=os.path.join(self.dir, 'log'),
            RABBITMQ_CONFIG_FILE=os.path.join(self.dir, 'rabbitmq'),
            RABBITMQ_ENABLED_PLUGINS_FILE=os.path.join(self.dir, 'plugins'),
            RABBITMQ_PID_FILE=os.path.join(self.dir, 'rabbit.pid'))
        self.proc = None

    @property
    def url(self):
        return 'rabbit://guest:guest@127.0.0.1:%d/' % self.port

    def start(self):
        with open(os.path.join(self.dir, 'plugins'), 'w') as f:
            f.write('[].\n')
        with open(os.path.join(self.dir, 'rabbitmq.conf'), 'w') as f:
            f.write('listeners.tcp.default = 127.0.0.1:%d\n' % self.port)
        self.log = open(os.path.join(self.dir, 'server.out'), 'w')
        self.proc = subprocess.Popen(
            [os.path.join(self.bin, 'rabbitmq-server')], env=self.env,
            stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True)
        try:
            # await_startup needs the node to exist: wait for the port.
            sqlserver._wait_for_port(self.port, self.proc, timeout=120)
        except sqlserver.ServerUnavailable:
            pass
        done = subprocess.run(
            [os.path.join(self.bin, 'rabbitmqctl'), '-n', self.node,
             '--timeout', '120',
             'await_startup'], env=self.env, capture_output=True)
        if done.returncode:
            with open(os.path.join(self.dir, 'server.out')) as f:
                output = f.read()[-1500:]
            self.stop()
            raise sqlserver.ServerUnavailable(
                'RabbitMQ did not start: %s\n%s'
                % (done.stderr.decode()[-500:], output))

    def _ctl(self, *args):
        subprocess.run([os.path.join(self.bin, 'rabbitmqctl'), '-n',
                        self.node] + list(args),
                       env=self.env, capture_output=True, check=True,
                       timeout=120)

    def vhost(self):
        """A new, empty virtual host, and the URL that opens it.

        Tests that share the broker each take one: queues, exchanges and
        unacknowledged messages of one test (an indexer killed with its
        messages in hand) never reach another.
        """
        name = 'test-%s' % uuid.uuid4().hex[:8]
        self._ctl('add_vhost', name)
        self._ctl('set_permissions', '-p', name, 'guest', '.*', '.*', '.*')
        return name, '%s%s' % (self.url, name)

    def delete_vhost(self, name):
        if self.proc is not None and self.proc.poll() is None:
            self._ctl('delete_vhost', name)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            subprocess.run([os.path.join(self.bin, 'rabbitmqctl'), '-n',
                            self.node, 'stop'],
                           env=self.env, capture_output=True, timeout=60)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
        if self.proc is not None:
            # The port mapper outlives the broker that started it.
            subprocess.run(['epmd', '-kill'], env=self.env,
                           capture_output=True, timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)


class SharedBroker(object):
    """Mixed into a test case: one broker for its class, a vhost per test.

    Each test's virtual host (``self.url``) is its own: what an earlier
    test's indexer left unacknowledged on the shared broker is redelivered
    there, not here.
    """

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.broker = RabbitMQ()
        cls.addClassCleanup(cls.broker.stop)
        cls.broker.start()

    def setUp(self):
        super().setUp()
        self.vhost, self.url = self.broker.vhost()
        self.addCleanup(self.broker.delete_vhost, self.vhost)


def notifier(test, url, exchange, publisher_id, topic, driver='messagingv2'):
    """A messagingv2 notifier on ``url``, publishing as a service does.

    To ``exchange`` (the service's ``control_exchange``) on ``topic``. Its
    transport is cleaned up with ``test``.

    :param driver: its drivers, as ``[oslo_messaging_notifications]driver``.
    """
    conf = cfg.ConfigOpts()
    conf([])
    # The first transport registers the options; the exchange must be set
    # before the one that sends is made.
    oslo_messaging.get_notification_transport(conf, url=url).cleanup()
    conf.set_override('control_exchange', exchange)
    conf.set_override('driver', [driver] if isinstance(driver, str)
                      else driver, group='oslo_messaging_notifications')
    transport = oslo_messaging.get_notification_transport(conf, url=url)
    test.addCleanup(transport.cleanup)
    return oslo_messaging.Notifier(
        transport, publisher_id=publisher_id,
        topics=[topic])
