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
"""Faults a real cloud meets, each injected in the middle of a stream.

Each fault is what an operator's cloud suffers: a process killed with
SIGKILL and restarted (as systemd restarts it), the index database user
losing its grants and its sessions for a while, MariaDB and RabbitMQ
restarting. A fault either ends at once (the process is back) or ends once
its time is over, or once what a test waits for has happened (a process
says that it waits at its exit for the index), by a thread of its own,
whatever the stream is doing then: a command the stream waits for (an
archive waiting at its exit for the index) does not hold it off, as it does
not hold off an operator's fix.
"""

import contextlib
import os
import signal
import threading
import time

from nova_ext_tools.cloud import layout
from nova_ext_tools.cloud import nova as cloud_nova
from nova_ext_tools.cloud import procs


#: Seconds between two looks at whether a fault's time is over.
LOOKED = 0.5


class Faults(object):

    def __init__(self, cloud, revoke_seconds=30):
        self.cloud = cloud
        self.revoke_seconds = revoke_seconds
        self._grants_back = None
        self.done = []
        #: Pids killed with SIGKILL.
        self.killed = []

    def names(self):
        return ['kill_cell_conductor', 'kill_api_worker',
                'revoke_index_grants', 'restart_mariadb', 'restart_rabbitmq']

    def inject(self, name):
        getattr(self, name)()
        self.done.append(name)

    def finish(self):
        """End the faults still on."""
        over, self._grants_back = self._grants_back, None
        if over is not None:
            over.set()
            self._grant_index()

    def kill_cell_conductor(self):
        name = 'nova-conductor-' + layout.CELLS[0]
        master = self.cloud.ps.pid(name)
        self.killed.extend(procs.group_members(master))
        self.cloud.ps.signal(name, signal.SIGKILL)
        self.cloud.nova.restart(name)

    def kill_api_worker(self):
        # One worker of nova_ext's nova-api, not its master: uwsgi starts
        # another, as in production.
        master = self.cloud.ps.pid('nova-api')
        workers = [p for p in procs.group_members(master) if p != master]
        self.killed.append(sorted(workers)[0])
        os.kill(sorted(workers)[0], signal.SIGKILL)

    def revoke_index_grants(self, until=None):
        """The index database user's grants gone for ``revoke_seconds``.

        Or, with ``until``, gone until it returns true, within
        ``revoke_seconds`` still: a test that wants a process to wait for
        the index at its exit has the grants back once it does, however
        long the process took to get there on a loaded machine.

        Its sessions are ended too (``KILL USER``), as a database failing
        over ends them: MariaDB checks database privileges as a session
        selects its database, so the sessions already open would go on
        writing. Every process of the cloud has to connect again, and is
        refused.
        """
        self.cloud.db.sql("REVOKE ALL PRIVILEGES ON `nova_ext_index`.* "
                          "FROM '%s'@'127.0.0.1'" % cloud_nova.INDEX_USER)
        self.cloud.db.sql("KILL USER '%s'" % cloud_nova.INDEX_USER)
        over = self._grants_back = threading.Event()
        deadline = time.monotonic() + self.revoke_seconds

        def back():
            while not over.wait(LOOKED):
                if (time.monotonic() >= deadline or
                        until is not None and until()):
                    self._grant_index()
                    return

        threading.Thread(target=back, daemon=True).start()

    def _grant_index(self, seconds=120):
        # MariaDB may be restarting then, another fault.
        deadline = time.monotonic() + seconds
        while True:
            try:
                self.cloud.db.sql("GRANT ALL ON `nova_ext_index`.* TO "
                                  "'%s'@'127.0.0.1'" % cloud_nova.INDEX_USER)
                return
            except procs.CloudError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)

    @contextlib.contextmanager
    def marks_refused(self):
        """Within, the index takes no mark; it reads and beats as before.

        Another session holds the index's sequence table locked for reading
        (``LOCK TABLES ... READ``), as a long transaction or a backup tool
        can: every mark takes the sequence's next number, so every hold
        waits for the lock (a second on MariaDB) and fails, while reads of
        the index, and heartbeats, go on. Only the processes that write
        learn of it.
        """
        session = self.cloud.db.client('nova_ext_index')
        try:
            session.stdin.write('LOCK TABLES nova_ext_index_sequence READ; '
                                "SELECT 'locked';\n")
            session.stdin.flush()
            said = session.stdout.readline().strip()
            if said != 'locked':
                raise procs.CloudError('MariaDB: the sequence table not '
                                       'locked: %r' % said)
            yield
        finally:
            # The lock ends with its session.
            session.stdin.close()
            session.wait(30)

    def restart_mariadb(self):
        self.cloud.db.restart()

    def take_cell_down(self, cell):
        """Cell ``cell``'s database refuses every Nova process at once.

        Its user loses its grants and its open connections are killed, so
        that no process's pool keeps a connection that still works.
        """
        user = 'nova_' + cell
        self.cloud.db.sql("REVOKE ALL PRIVILEGES ON `nova_%s`.* FROM "
                          "'%s'@'127.0.0.1'" % (cell, user))
        for line in self.cloud.db.sql(
                "SELECT id FROM information_schema.processlist WHERE "
                "user = '%s'" % user).split()[1:]:
            try:
                self.cloud.db.sql('KILL CONNECTION %d' % int(line))
            except procs.CloudError:
                pass    # it closed meanwhile

    def bring_cell_up(self, cell):
        self.cloud.db.sql("GRANT ALL ON `nova_%s`.* TO 'nova_%s'@'127.0.0.1'"
                          % (cell, cell))

    def holders(self):
        """``{pid: host}`` of every holder row of the index."""
        rows = self.cloud.db.sql(
            'SELECT pid, host FROM nova_ext_index_holders', 'nova_ext_index')
        return {int(pid): host for pid, host in (
            line.split('\t') for line in rows.splitlines()[1:])}

    def restart_rabbitmq(self):
        self.cloud.mq.restart()
