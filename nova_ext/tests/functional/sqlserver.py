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

Each server runs on 127.0.0.1 on a free port, with its data in a temporary
directory, and is stopped and removed when the test class is done. The
binaries come from Debian's packages, which ``tools/test-packages``
installs before the functional tests.
"""

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time


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


class PostgreSQL(object):
    """A PostgreSQL cluster of its own, as the ``postgres`` system user.

    PostgreSQL refuses to run as root, which CI is; the cluster belongs to
    the ``postgres`` user the Debian package creates.
    """

    def __init__(self):
        found = sorted(glob.glob('/usr/lib/postgresql/*/bin/initdb'))
        if not found:
            raise ServerUnavailable(
                'PostgreSQL is not installed; tools/test-packages installs '
                'it (Debian package postgresql)')
        self.bindir = os.path.dirname(found[-1])
        self.dir = tempfile.mkdtemp(prefix='nova-ext-pg-')
        self.port = _free_port()
        self.proc = None
        self._as_postgres = os.getuid() == 0

    def _cmd(self, *argv):
        if self._as_postgres:
            return ['runuser', '-u', 'postgres', '--'] + list(argv)
        return list(argv)

    def start(self):
        data = os.path.join(self.dir, 'data')
        if self._as_postgres:
            pw = pwd.getpwnam('postgres')
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        subprocess.run(self._cmd(os.path.join(self.bindir, 'initdb'), '-D',
                                 data, '-U', 'postgres', '-A', 'trust',
                                 '--no-sync'),
                       check=True, capture_output=True)
        self.proc = subprocess.Popen(
            self._cmd(os.path.join(self.bindir, 'postgres'), '-D', data,
                      '-h', '127.0.0.1', '-p', str(self.port),
                      '-k', self.dir, '-F'),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_for_port(self.port, self.proc)

    def create_database(self, name):
        deadline = time.monotonic() + 30
        while True:
            done = subprocess.run(
                self._cmd(os.path.join(self.bindir, 'createdb'), '-h',
                          '127.0.0.1', '-p', str(self.port), '-U',
                          'postgres', name), capture_output=True)
            if done.returncode == 0:
                break
            if time.monotonic() > deadline:
                raise ServerUnavailable(done.stderr.decode())
            time.sleep(0.2)
        return ('postgresql+psycopg2://postgres@127.0.0.1:%d/%s'
                % (self.port, name))

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)
