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
"""The cloud's infrastructure: MariaDB, RabbitMQ and OVN, from Debian.

Each is started as its own process on 127.0.0.1, its data under the
cloud's state directory; none of Debian's system services is used.
"""

import os
import shutil
import subprocess

from nova_ext_tools.cloud import layout
from nova_ext_tools.cloud import procs


def _binary(name, *dirs):
    for d in dirs + tuple(os.environ.get('PATH', '').split(os.pathsep)):
        path = os.path.join(d, name)
        if os.access(path, os.X_OK):
            return path
    raise procs.CloudError('%s is not installed (tools/cloud-packages.txt '
                           'names its Debian package)' % name)


class MariaDB(object):
    """One MariaDB server for every database of the cloud."""

    def __init__(self, lay, ps):
        self.lay, self.ps = lay, ps
        self.dir = lay.path('mariadb')
        self.sock = os.path.join(self.dir, 'mysqld.sock')
        # As root, mariadbd must be told to stay root.
        self.user = ['--user=root'] if os.getuid() == 0 else []

    def _common(self):
        return ['--no-defaults', '--datadir=%s' % os.path.join(
            self.dir, 'data')] + self.user + [
            '--tmpdir=%s' % os.path.join(self.dir, 'tmp')]

    def argv(self):
        return [_binary('mariadbd', '/usr/sbin')] + self._common() + [
            '--socket=%s' % self.sock,
            '--log-error=%s' % os.path.join(self.dir, 'error.log'),
            '--bind-address=127.0.0.1',
            '--port=%d' % self.lay.ports['mariadb'],
            '--skip-name-resolve', '--skip-log-bin',
            '--max-connections=2000', '--innodb-log-file-size=64M',
            '--innodb-flush-log-at-trx-commit=2',
            '--character-set-server=utf8mb4',
            '--collation-server=utf8mb4_general_ci']

    def start(self, initialise=True):
        if initialise:
            os.makedirs(os.path.join(self.dir, 'tmp'), exist_ok=True)
            subprocess.run(
                [_binary('mariadb-install-db', '/usr/bin')]
                + self._common() + [
                    '--auth-root-authentication-method=normal',
                    '--skip-test-db', '--skip-name-resolve'],
                check=True, capture_output=True)
        self.ps.start('mariadb', self.argv())
        procs.wait_for('MariaDB', lambda: os.path.exists(self.sock), 60,
                       self.ps, 'mariadb')
        if initialise:
            self.sql("CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'; "
                     "ALTER USER 'root'@'127.0.0.1' IDENTIFIED BY '%s'; "
                     "GRANT ALL ON *.* TO 'root'@'127.0.0.1' "
                     "WITH GRANT OPTION;" % layout.PASSWORD)

    def client(self, database=None):
        """A root session of its own: a ``mariadb`` reading its stdin.

        For what must last across statements (a lock held while the test
        goes on); ``stdin`` and ``stdout`` are text pipes.
        """
        argv = [_binary('mariadb', '/usr/bin'), '--no-defaults',
                '--socket=%s' % self.sock, '-uroot', '--batch',
                '--unbuffered', '--skip-column-names']
        if database:
            argv.append(database)
        return subprocess.Popen(argv, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)

    def sql(self, statements, database=None):
        argv = [_binary('mariadb', '/usr/bin'), '--no-defaults',
                '--socket=%s' % self.sock, '-uroot', '-e', statements]
        if database:
            argv.append(database)
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode:
            raise procs.CloudError('MariaDB: %s: %s'
                                   % (statements, done.stderr))
        return done.stdout

    def create_database(self, name, user=None):
        """A new database; with ``user``, a user of its own for it."""
        self.sql('CREATE DATABASE IF NOT EXISTS `%s` CHARACTER SET utf8mb4'
                 % name)
        if user:
            self.sql("CREATE USER IF NOT EXISTS '%s'@'127.0.0.1' "
                     "IDENTIFIED BY '%s'; GRANT ALL ON `%s`.* TO "
                     "'%s'@'127.0.0.1';" % (user, layout.PASSWORD, name,
                                            user))

    def stop(self):
        self.ps.stop('mariadb', timeout=60)

    def restart(self):
        self.stop()
        self.start(initialise=False)


class RabbitMQ(object):
    """One broker, a vhost per cell (and for the API, notifications)."""

    #: Debian's /usr/sbin wrappers switch to the rabbitmq user; these don't.
    BIN = '/usr/lib/rabbitmq/bin'

    def __init__(self, lay, ps):
        self.lay, self.ps = lay, ps
        self.dir = lay.path('rabbitmq')
        self.node = 'nova-ext-cloud@localhost'
        self.env = dict(
            os.environ,
            PATH=self.BIN + ':' + os.environ.get('PATH', ''),
            HOME=self.dir,
            # epmd, which the broker starts, listens on loopback only, on
            # a port of the cloud's: the cloud stops it with the broker,
            # and another broker of the host (the functional tests') has
            # its own.
            ERL_EPMD_ADDRESS='127.0.0.1',
            ERL_EPMD_PORT=str(lay.ports['epmd']),
            RABBITMQ_NODENAME=self.node,
            RABBITMQ_NODE_IP_ADDRESS='127.0.0.1',
            RABBITMQ_NODE_PORT=str(lay.ports['rabbit']),
            RABBITMQ_DIST_PORT=str(lay.ports['rabbit_dist']),
            RABBITMQ_MNESIA_BASE=os.path.join(self.dir, 'mnesia'),
            RABBITMQ_LOG_BASE=os.path.join(self.dir, 'log'),
            RABBITMQ_CONFIG_FILE=os.path.join(self.dir, 'rabbitmq'),
            RABBITMQ_ENABLED_PLUGINS_FILE=os.path.join(self.dir, 'plugins'),
            RABBITMQ_PID_FILE=os.path.join(self.dir, 'rabbit.pid'))

    def start(self, initialise=True):
        if not os.path.exists(os.path.join(self.BIN, 'rabbitmq-server')):
            raise procs.CloudError('rabbitmq-server is not installed')
        os.makedirs(self.dir, exist_ok=True)
        with open(os.path.join(self.dir, 'plugins'), 'w') as f:
            f.write('[].\n')
        with open(os.path.join(self.dir, 'rabbitmq.conf'), 'w') as f:
            f.write('listeners.tcp.default = 127.0.0.1:%d\n'
                    'loopback_users = none\n' % self.lay.ports['rabbit'])
        self.ps.start('rabbitmq', [os.path.join(self.BIN, 'rabbitmq-server')],
                      env=self.env)
        procs.wait_for('RabbitMQ', lambda: procs.port_open(
            self.lay.ports['rabbit']), 120, self.ps, 'rabbitmq')
        self.ctl('--timeout', '120', 'await_startup')
        if initialise:
            self.ctl('add_user', 'nova', layout.PASSWORD)
            self.ctl('set_user_tags', 'nova', 'administrator')

    def ctl(self, *args):
        done = subprocess.run(
            [os.path.join(self.BIN, 'rabbitmqctl'), '-n', self.node]
            + list(args), env=self.env, capture_output=True, text=True,
            timeout=180)
        if done.returncode:
            raise procs.CloudError('rabbitmqctl %s: %s'
                                   % (' '.join(args), done.stderr[-800:]))
        return done.stdout

    def add_vhost(self, name):
        self.ctl('add_vhost', name)
        self.ctl('set_permissions', '-p', name, 'nova', '.*', '.*', '.*')

    def stop(self):
        if self.ps.running('rabbitmq'):
            subprocess.run(
                [os.path.join(self.BIN, 'rabbitmqctl'), '-n', self.node,
                 'stop'], env=self.env, capture_output=True, timeout=120)
        self.ps.stop('rabbitmq', timeout=60)
        # epmd outlives the broker it was started by; the one on the
        # cloud's port is the cloud's (ERL_EPMD_PORT).
        subprocess.run(['epmd', '-kill'], env=self.env,
                       capture_output=True)

    def restart(self):
        self.stop()
        self.start(initialise=False)


class OVN(object):
    """OVN's databases and northd, and a chassis for each compute host.

    A chassis is ovsdb-server, ovs-vswitchd and ovn-controller. The real
    ovn-controller registers each chassis and keeps it alive as neutron's
    OVN driver expects (it answers every configuration round only while it
    is connected to its integration bridge), so neutron binds the compute
    hosts' ports. Each ovs-vswitchd runs OVS's dummy datapath, inside the
    process, as OVN's own test suite does for its simulated hypervisors:
    the userspace datapath makes kernel tap devices named after the
    datapath and the bridges, the same names for every chassis of the one
    machine, so the second chassis would fail to make its integration
    bridge whenever the first holds them.
    """

    def __init__(self, lay, ps):
        self.lay, self.ps = lay, ps
        self.dir = lay.path('ovn')

    @property
    def nb(self):
        return 'tcp:127.0.0.1:%d' % self.lay.ports['ovn_nb']

    @property
    def sb(self):
        return 'tcp:127.0.0.1:%d' % self.lay.ports['ovn_sb']

    def _db(self, name, schema, remote):
        db = os.path.join(self.dir, name + '.db')
        if not os.path.exists(db):
            subprocess.run(['ovsdb-tool', 'create', db, schema], check=True)
        self.ps.start('ovsdb-' + name, [
            _binary('ovsdb-server', '/usr/sbin'), '--no-chdir',
            '--remote=' + remote,
            '--unixctl=%s' % os.path.join(self.dir, name + '.ctl'), db])

    def start(self):
        os.makedirs(self.dir, exist_ok=True)
        # ptcp takes the port first, then the address to bind.
        self._db('nb', '/usr/share/ovn/ovn-nb.ovsschema',
                 'ptcp:%d:127.0.0.1' % self.lay.ports['ovn_nb'])
        self._db('sb', '/usr/share/ovn/ovn-sb.ovsschema',
                 'ptcp:%d:127.0.0.1' % self.lay.ports['ovn_sb'])
        for port in ('ovn_nb', 'ovn_sb'):
            procs.wait_for('OVN ' + port, lambda p=port: procs.port_open(
                self.lay.ports[p]), 30)
        self.ps.start('ovn-northd', [
            'ovn-northd', '--ovnnb-db=' + self.nb, '--ovnsb-db=' + self.sb,
            '--unixctl=%s' % os.path.join(self.dir, 'northd.ctl')])
        for i, cell in enumerate(layout.CELLS):
            self.start_chassis(self.lay.compute_host(cell), i)

    def start_chassis(self, host, i):
        run = os.path.join(self.dir, host)
        os.makedirs(run, exist_ok=True)
        env = dict(os.environ, OVS_RUNDIR=run, OVN_RUNDIR=run,
                   OVS_DBDIR=run, OVS_LOGDIR=run, OVN_LOGDIR=run)
        sock = 'unix:' + os.path.join(run, 'db.sock')
        db = os.path.join(run, 'conf.db')
        if not os.path.exists(db):
            subprocess.run(['ovsdb-tool', 'create', db,
                            '/usr/share/openvswitch/vswitch.ovsschema'],
                           check=True)
        self.ps.start('ovs-db-' + host, [
            _binary('ovsdb-server', '/usr/sbin'), '--no-chdir',
            '--remote=p' + sock,
            '--unixctl=%s' % os.path.join(run, 'ovsdb.ctl'), db], env=env)
        procs.wait_for('OVS database of ' + host, lambda: os.path.exists(
            sock[5:]), 30, self.ps, 'ovs-db-' + host)
        vsctl = ['ovs-vsctl', '--db=' + sock]
        subprocess.run(vsctl + ['--no-wait', 'init'], check=True, env=env)
        self.ps.start('ovs-vswitchd-' + host, [
            _binary('ovs-vswitchd', '/usr/sbin'), '--enable-dummy=override',
            sock, '--unixctl=%s' % os.path.join(run, 'vswitchd.ctl')],
            env=env)
        # Each chassis needs an encapsulation address of its own; loopback
        # has a whole /8. No tunnel ever carries traffic here.
        subprocess.run(vsctl + [
            '--no-wait', 'set', 'open', '.',
            'external_ids:ovn-remote=' + self.sb,
            'external_ids:ovn-encap-type=geneve',
            'external_ids:ovn-encap-ip=127.0.0.%d' % (i + 2),
            'external_ids:system-id=' + host,
            'external_ids:hostname=' + host,
            'external_ids:ovn-bridge-datapath-type=netdev',
            'external_ids:ovn-bridge-mappings=public:br-ex'],
            check=True, env=env)
        self.ps.start('ovn-controller-' + host, ['ovn-controller', sock],
                      env=env)

    def chassis_up(self, host):
        """Whether ``host``'s chassis is registered and has its bridge.

        Without its integration bridge, ovn-controller stops answering
        configuration rounds, and neutron soon refuses to bind ports to
        the host ("dead agent").
        """
        out = subprocess.run(
            ['ovn-sbctl', '--db=' + self.sb, '--bare', '--columns=name',
             'find', 'Chassis_Private', 'name=%s' % host],
            capture_output=True, text=True).stdout
        if host not in out:
            return False
        sock = 'unix:' + os.path.join(self.dir, host, 'db.sock')
        bridge = subprocess.run(
            ['ovs-vsctl', '--db=' + sock, '--timeout=5', 'get', 'Interface',
             'br-int', 'error', 'ofport'],
            capture_output=True, text=True).stdout.split()
        return bridge == ['[]', '65534']


def remove_state(lay):
    shutil.rmtree(lay.state, ignore_errors=True)
