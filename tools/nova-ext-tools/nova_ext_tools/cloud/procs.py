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
"""The cloud's processes: started in their own session, stopped by pid.

Each process the cloud starts is recorded in ``<state>/pids/<name>.pid``
with its log in ``<state>/log/<name>.log``; ``stop`` ends exactly those
(the whole process group each one leads: uwsgi's workers, rabbit's beam),
and nothing else on the machine.

A process started with ``leader_stop`` is stopped as systemd stops a unit
with ``KillMode=mixed``: SIGTERM to it alone, which ends its workers its
own way (a uwsgi master with ``gracefully_kill_them_all``), and SIGKILL to
the whole group only past the timeout.
"""

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request


class CloudError(Exception):
    pass


def tail(path, chars=3000):
    try:
        with open(path, errors='replace') as f:
            return f.read()[-chars:]
    except OSError:
        return ''


class Processes(object):
    """The cloud's processes, by name, kept in its state directory."""

    def __init__(self, state):
        self.state = state
        self.piddir = os.path.join(state, 'pids')
        self.logdir = os.path.join(state, 'log')

    def log(self, name):
        return os.path.join(self.logdir, name + '.log')

    def _pidfile(self, name):
        return os.path.join(self.piddir, name + '.pid')

    def _leaderfile(self, name):
        return os.path.join(self.piddir, name + '.leader-stop')

    def start(self, name, argv, env=None, cwd=None, leader_stop=False):
        """Start ``argv`` as ``name`` in a session of its own.

        :param leader_stop: :meth:`stop` sends SIGTERM to it alone, not to
            its whole group.
        """
        if self.running(name):
            raise CloudError('%s is running already (pid %d)'
                             % (name, self.pid(name)))
        # Made here, not before: a new build removes the whole state.
        os.makedirs(self.piddir, exist_ok=True)
        os.makedirs(self.logdir, exist_ok=True)
        out = open(self.log(name), 'ab')
        try:
            proc = subprocess.Popen(
                list(argv), env=env, cwd=cwd or self.state,
                stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True)
        finally:
            out.close()
        with open(self._pidfile(name), 'w') as f:
            f.write('%d\n' % proc.pid)
        if leader_stop:
            with open(self._leaderfile(name), 'w'):
                pass
        else:
            _unlink(self._leaderfile(name))
        return proc.pid

    def pid(self, name):
        try:
            with open(self._pidfile(name)) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def names(self):
        if not os.path.isdir(self.piddir):
            return []
        return sorted(n[:-4] for n in os.listdir(self.piddir)
                      if n.endswith('.pid'))

    def running(self, name):
        pid = self.pid(name)
        return pid is not None and alive(pid)

    def signal(self, name, signum, group=True):
        pid = self.pid(name)
        if pid is None:
            return False
        try:
            if group:
                os.killpg(pid, signum)
            else:
                os.kill(pid, signum)
        except ProcessLookupError:
            return False
        return True

    def stop(self, name, timeout=30):
        """SIGTERM ``name``'s process group, SIGKILL it after ``timeout``.

        Or SIGTERM to ``name`` alone, if it was started with
        ``leader_stop``.
        """
        self.stop_many([name], timeout)

    def stop_many(self, names, timeout=30):
        """:meth:`stop` ``names`` at once, as an init system stops units.

        Each is told to stop before any is waited for: a Nova service takes
        seconds to shut down gracefully, and the others need not wait for
        it.
        """
        told = [name for name in names if self.running(name)]
        for name in told:
            self.signal(name, signal.SIGTERM, group=not os.path.exists(
                self._leaderfile(name)))
        deadline = time.monotonic() + timeout
        while (any(self.running(name) for name in told) and
                time.monotonic() < deadline):
            _reap()
            time.sleep(0.2)
        # Whatever of their groups is left (a worker that ignored SIGTERM),
        # gone before this returns: their ports are free again.
        groups = {self.pid(name) for name in names} - {None}
        for name in names:
            self.signal(name, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while groups & live_groups() and time.monotonic() < deadline:
            _reap()
            time.sleep(0.1)
        for name in names:
            _unlink(self._pidfile(name))
            _unlink(self._leaderfile(name))

    def stop_all(self):
        """Stop every recorded process."""
        self.stop_many(self.names())

    def cpu_seconds(self, names):
        """``{name: CPU seconds}`` its process group's live members used.

        User and system time, the group's children included while they
        live (uwsgi's workers, a conductor's); a name not running counts
        0.
        """
        ticks = {}
        for _, fields in _live():
            group = int(fields[2])
            ticks[group] = ticks.get(group, 0) + cpu_ticks(fields)
        return {name: ticks.get(self.pid(name), 0) / _TICKS
                for name in names}

    def check(self, name):
        if not self.running(name):
            raise CloudError('%s exited; its log ends with:\n%s'
                             % (name, tail(self.log(name))))


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def stat_fields(path):
    """The fields of a ``stat`` file after the command name; None if gone.

    The first is the state, the third the process group, the 12th and
    13th the user and system CPU time (the 3rd, 5th, 14th and 15th of the
    whole line).
    """
    try:
        with open(path) as stat:
            # The command name, in parentheses, may hold spaces.
            return stat.read().rsplit(')', 1)[1].split()
    except (OSError, IndexError):
        return None


def cpu_ticks(fields):
    """The user and system CPU time of :func:`stat_fields`, in ticks."""
    return int(fields[11]) + int(fields[12])


_TICKS = os.sysconf('SC_CLK_TCK')


def _live():
    """``(pid, stat fields)`` of every live process, in one look."""
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            fields = stat_fields('/proc/%s/stat' % entry)
            if fields is not None and fields[0] != 'Z':
                yield int(entry), fields


def live_groups():
    """The process groups that have a live process."""
    return {int(fields[2]) for _, fields in _live()}


def group_members(pgid):
    """The live processes of process group ``pgid``."""
    return [pid for pid, fields in _live() if int(fields[2]) == pgid]


def alive(pid):
    """Whether process ``pid`` runs.

    A child of ours that exited stays a zombie until reaped: it does not.
    """
    fields = stat_fields('/proc/%d/stat' % pid)
    return fields is not None and fields[0] != 'Z'


def _reap():
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def wait_for(what, probe, timeout, procs=None, name=None, interval=0.25):
    """Call ``probe`` until it returns true; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if procs is not None and name is not None:
            procs.check(name)
        try:
            if probe():
                return
        except Exception as e:
            last = e
        time.sleep(interval)
    detail = ''
    if procs is not None and name is not None:
        detail = '\n' + tail(procs.log(name))
    raise CloudError('%s not ready within %d s (last: %s)%s'
                     % (what, timeout, last, detail))


def port_open(port):
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(('127.0.0.1', port)) == 0


def http_up(url):
    """Whether ``url`` answers HTTP at all (any status but a 5xx)."""
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status < 500
    except urllib.error.HTTPError as e:
        return e.code < 500
