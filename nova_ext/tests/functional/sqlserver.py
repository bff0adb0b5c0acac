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
"""Throwaway SQL servers for the backend tests, started by the tests.

Each server runs on 127.0.0.1 on a free port, with its data, socket and log
in a temporary directory, and is stopped and removed when the test class is
done; it reads no system configuration, so a server the Debian package may
have started (port 5432 or 3306, /run/...) is neither used nor disturbed.
The binaries come from Debian's packages, which ``tools/test-packages``
installs before the functional tests; without them the tests fail (CI must
not pass by running nothing) with a message saying so.

Usage, one server per test class: mix :class:`OnServer` into the test
class, set ``SERVER``, and ask ``self.new_database()`` for an empty
database's URL.
"""

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid

import psycopg2
import pymysql


class ServerUnavailable(Exception):
    pass


def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _wait_for_port(port, proc, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServerUnavailable('server exited with %s' % proc.returncode)
        with socket.socket() as s:
            if s.connect_ex(('127.0.0.1', port)) == 0:
                return
        time.sleep(0.1)
    raise ServerUnavailable('server did not listen on %d within %d s'
                            % (port, timeout))


def _tail(path, chars=2000):
    try:
        with open(path, errors='replace') as f:
            return f.read()[-chars:]
    except OSError:
        return ''


def _binary(name, *dirs):
    for d in dirs + tuple(os.environ.get('PATH', '').split(os.pathsep)):
        path = os.path.join(d, name)
        if os.access(path, os.X_OK):
            return path
    return None


class _Server(object):
    """A database server process of our own.

    Subclasses say how to find, initialise, run and log in to one.
    """

    #: SQLAlchemy's name of the backend.
    DIALECT = None
    #: Whether ``ORDER BY x ASC`` puts NULLs first (and DESC last).
    NULLS_FIRST = None
    #: The Debian packages that have the server (see tools/test-packages).
    PACKAGES = ()
    #: The SQLAlchemy URL of a database, from ``port`` and ``name``.
    URL = None
    #: Attempts at a free port: another process may take the one picked
    #: before the server binds it.
    ATTEMPTS = 3

    def __init__(self):
        # Before anything is created: nothing to clean up when missing.
        self._find_binaries()
        self.dir = tempfile.mkdtemp(prefix='nova-ext-%s-' % self.DIALECT)
        self.data = os.path.join(self.dir, 'data')
        self.log = os.path.join(self.dir, 'server.log')
        self.port = None
        self.proc = None

    @classmethod
    def _missing(cls):
        return ServerUnavailable(
            '%s is not installed: run tools/test-packages (as root or with '
            'sudo), which installs the Debian packages %s; tox -e functional '
            'runs it first' % (cls.__name__, ' '.join(cls.PACKAGES)))

    def _find_binaries(self):
        """Set the paths of the binaries, or raise _missing()."""
        raise NotImplementedError()

    def _initialise(self):
        """Create the data directory."""
        raise NotImplementedError()

    def _argv(self):
        """The server's command line, for ``self.port``."""
        raise NotImplementedError()

    def _connect(self):
        """A DB-API connection to the server, outside any database."""
        raise NotImplementedError()

    def _run(self, what, argv):
        done = subprocess.run(argv, capture_output=True,
                              stdin=subprocess.DEVNULL)
        if done.returncode:
            raise ServerUnavailable('%s failed (exit %d): %s' % (
                what, done.returncode,
                (done.stdout + done.stderr).decode(errors='replace')[-2000:]))

    def start(self):
        self._initialise()
        for attempt in range(self.ATTEMPTS):
            self.port = _free_port()
            self._spawn()
            try:
                _wait_for_port(self.port, self.proc)
                return
            except ServerUnavailable as e:
                self._terminate()
                if attempt == self.ATTEMPTS - 1:
                    raise ServerUnavailable('%s: %s\n%s' % (
                        type(self).__name__, e, _tail(self.log)))

    def _logged_in(self):
        """A connection from :meth:`_connect`, once logins are accepted.

        The port answers a moment before they are: PostgreSQL refuses
        them while it starts up ("the database system is starting up").
        """
        deadline = time.monotonic() + 30
        while True:
            try:
                return self._connect()
            except (psycopg2.OperationalError,
                    pymysql.err.OperationalError) as e:
                if time.monotonic() > deadline:
                    raise ServerUnavailable('%s: %s\n%s' % (
                        type(self).__name__, e, _tail(self.log)))
                time.sleep(0.2)

    def create_database(self, name):
        """Create the database ``name``; returns its SQLAlchemy URL."""
        conn = self._logged_in()
        try:
            # As an operator would: no character set, the server's.
            conn.cursor().execute('CREATE DATABASE %s' % name)
        finally:
            conn.close()
        return self.URL % {'port': self.port, 'name': name}

    def _terminate(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def halt(self):
        """Stop the server, keeping its data, until :meth:`resume`."""
        self._terminate()

    def _spawn(self):
        with open(self.log, 'ab') as log:
            # A session of its own: stop() can kill the server with
            # whatever started it (runuser).
            self.proc = subprocess.Popen(
                self._argv(), stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True)

    def resume(self):
        """Start the halted server again, on its port, with its data.

        Returns once it accepts logins, as a server an operator started
        again is back once it does.
        """
        self._spawn()
        try:
            _wait_for_port(self.port, self.proc)
        except ServerUnavailable as e:
            raise ServerUnavailable('%s: %s\n%s' % (
                type(self).__name__, e, _tail(self.log)))
        self._logged_in().close()

    def stop(self):
        self._terminate()
        shutil.rmtree(self.dir, ignore_errors=True)


class PostgreSQL(_Server):
    """A PostgreSQL cluster of its own, as the ``postgres`` system user.

    PostgreSQL refuses to run as root, which CI is; the cluster then
    belongs to the ``postgres`` user the Debian package creates. The
    cluster's locale is C: strings sort by code point, as in the SQLite
    cell databases of Nova's harness that the index is compared with.
    """

    DIALECT = 'postgresql'
    NULLS_FIRST = False
    PACKAGES = ('postgresql',)
    URL = 'postgresql+psycopg2://postgres@127.0.0.1:%(port)d/%(name)s'

    def _find_binaries(self):
        found = sorted(glob.glob('/usr/lib/postgresql/*/bin/initdb'),
                       key=lambda p: int(p.split('/')[-3]))
        if not found:
            raise self._missing()
        self.bindir = os.path.dirname(found[-1])
        self._as_postgres = os.getuid() == 0

    def _cmd(self, name, *args):
        argv = [os.path.join(self.bindir, name)] + list(args)
        if self._as_postgres:
            return ['runuser', '-u', 'postgres', '--'] + argv
        return argv

    def _initialise(self):
        if self._as_postgres:
            pw = pwd.getpwnam('postgres')
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self._run('initdb', self._cmd(
            'initdb', '-D', self.data, '-U', 'postgres', '-A', 'trust',
            '-E', 'UTF8', '--locale=C', '--no-sync'))

    def _argv(self):
        # -F: no fsync, -k: the socket in our directory, not /run.
        return self._cmd('postgres', '-D', self.data, '-h', '127.0.0.1',
                         '-p', str(self.port), '-k', self.dir, '-F')

    def halt(self):
        # A fast shutdown, as an operator's: a signal to runuser makes it
        # kill PostgreSQL, which then cannot start again on its data.
        self._run('pg_ctl stop', self._cmd('pg_ctl', 'stop', '-D', self.data,
                                           '-m', 'fast', '-w'))
        self.proc.wait(30)

    def _connect(self):
        conn = psycopg2.connect(host='127.0.0.1', port=self.port,
                                user='postgres', dbname='postgres')
        # CREATE DATABASE cannot run in a transaction.
        conn.autocommit = True
        return conn


class MariaDB(_Server):
    """A MariaDB server of its own, with no configuration file read.

    ``--no-defaults`` keeps Debian's /etc/mysql out: its socket and port
    are the system server's. The server's defaults are then upstream's
    (``latin1``), which is what an index migration must not rely on.
    """

    DIALECT = 'mysql'
    NULLS_FIRST = True
    PACKAGES = ('mariadb-server-core', 'mariadb-client-core')
    URL = 'mysql+pymysql://root@127.0.0.1:%(port)d/%(name)s'

    def _find_binaries(self):
        self.mariadbd = _binary('mariadbd', '/usr/sbin', '/usr/libexec')
        self.install_db = _binary('mariadb-install-db', '/usr/bin')
        # mariadb-install-db runs it, from the client package.
        print_defaults = _binary('my_print_defaults', '/usr/bin')
        if not (self.mariadbd and self.install_db and print_defaults):
            raise self._missing()
        # As root, mariadbd must be told to stay root (or to switch to a
        # user who can write this directory); otherwise it runs as us.
        self._user = ['--user=root'] if os.getuid() == 0 else []

    def _common(self):
        # --no-defaults must come first. A small redo log: the default
        # 96 MiB is written out in full at install time.
        # Its own temporary directory, install time included: sorts and
        # joins spill to temporary tables, in /tmp by default, where
        # anything cleaning /tmp (or another install) pulls them away.
        return ['--no-defaults', '--datadir=%s' % self.data] + self._user + [
            '--innodb-log-file-size=8M',
            '--tmpdir=%s' % os.path.join(self.dir, 'tmp')]

    def _initialise(self):
        os.makedirs(os.path.join(self.dir, 'tmp'))
        self._run('mariadb-install-db', [self.install_db] + self._common() + [
            '--auth-root-authentication-method=normal', '--skip-test-db',
            '--skip-name-resolve'])

    def _argv(self):
        return [self.mariadbd] + self._common() + [
            '--socket=%s' % os.path.join(self.dir, 'mysqld.sock'),
            '--pid-file=%s' % os.path.join(self.dir, 'mysqld.pid'),
            '--log-error=%s' % self.log,
            '--skip-networking=0', '--bind-address=127.0.0.1',
            '--port=%d' % self.port, '--skip-name-resolve',
            # Throwaway data: no durability, less disk I/O.
            '--innodb-flush-log-at-trx-commit=0', '--skip-log-bin']

    def _connect(self):
        return pymysql.connect(host='127.0.0.1', port=self.port,
                               user='root')


class OnServer(object):
    """One server of ``SERVER``'s kind per test class, a database per ask.

    ``SERVER()`` fails the class, naming tools/test-packages, when the
    server is not installed.
    """

    #: A server class of this module: the backend.
    SERVER = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.sql_server = cls.SERVER()
        cls.addClassCleanup(cls.sql_server.stop)
        cls.sql_server.start()

    def new_database(self, prefix='idx'):
        """The URL of a new, empty database on the class's server."""
        return self.sql_server.create_database(
            '%s_%s' % (prefix, uuid.uuid4().hex[:12]))
