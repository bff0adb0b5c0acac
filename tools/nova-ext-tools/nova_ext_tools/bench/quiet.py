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
"""Keep the benchmark's other processes stopped while a child is timed.

Every cloud of a run lives in a process of its own (clouds.py), and each
keeps the harness's services running: an idle cloud of 32 cells spends
about a fifth of a core, mostly in oslo.messaging's fake driver polling
its queues. A timed child shares the machine's cores with all of them,
its own parent included; a real nova-api would not. So, for its timed
requests, a child stops them (SIGSTOP) and resumes them (SIGCONT) after.

Three hazards, each handled here:

* A process stopped while it holds a write lock on an SQLite file (a
  heartbeat writing to a cell database) would fail the child's reads of
  that file once SQLite's busy timeout ran out. Once they are stopped, the
  kernel's table of file locks (``/proc/locks``) is read; if a stopped
  process holds a write lock, they are all resumed and stopped again a
  moment later.
* A child that hangs (the fork hazard of isolate.py) would leave them
  stopped for ever, its parent's watchdog with them. A guardian process,
  forked before they are stopped, resumes them once the watched process
  has left or has used no CPU for ``stall`` seconds.
* A resumed process catches up at once with what it missed, and a child
  forked in that burst is likely to hang (:func:`settle`).
"""

import os
import signal
import time

from nova_ext_tools.bench import isolate
from nova_ext_tools.cloud import procs

#: Stop, look for locks and resume at most this many times.
TRIES = 100
#: Seconds between two tries, for a lock holder to get on.
RETRY_WAIT = 0.05
#: Seconds given a signalled process to stop, and between two looks.
STOP_WAIT, STOP_POLL = 5.0, 0.001
#: Seconds between the guardian's looks at the watched process.
GUARD_POLL = 1.0


class Quiet(object):
    """While entered, the processes ``pids`` are stopped, if they can be.

    :param pids: the processes to stop; this one is left out.
    :param stall: seconds the watched process may use no CPU before the
        guardian resumes them.
    :param watch: the process whose progress the guardian watches; by
        default this one.

    ``stopped`` says, once entered, whether they were stopped: after
    :data:`TRIES` tries with a lock held each time, they are left running.
    """

    def __init__(self, pids, stall, watch=None):
        self.pids = [pid for pid in pids if pid != os.getpid()]
        self.stall = stall
        self.watch = watch or os.getpid()
        self.stopped = False
        self.tries = 0
        self._guardian = None

    def __enter__(self):
        if not self.pids:
            return self
        self._guardian = _guard(self.pids, self.watch, self.stall)
        while self.tries < TRIES:
            self.tries += 1
            _signal(self.pids, signal.SIGSTOP)
            if _all_stopped(self.pids) and not locks_held(self.pids):
                self.stopped = True
                return self
            _signal(self.pids, signal.SIGCONT)
            time.sleep(RETRY_WAIT)
        return self

    def __exit__(self, *exc):
        if self.stopped:
            _signal(self.pids, signal.SIGCONT)
            self.stopped = False
        if self._guardian is not None:
            _signal([self._guardian], signal.SIGKILL)
            os.waitpid(self._guardian, 0)
            self._guardian = None


def settle(busy=0.5, window=1.0, limit=30.0):
    """Wait until this process uses less than ``busy`` of a core.

    A resumed process catches up at once with what its threads missed
    while it was stopped: every compute's heartbeat and periodic tasks,
    each opening SQLite connections. A child forked in that burst is
    likely to inherit one of SQLite's locks held by another thread, and
    to hang on it (isolate.py): at 32 cells, eight of the nine first
    forks of timed children did, in the first run that stopped the
    clouds. So a process forks a timed child only once it has spent less
    than ``busy`` of a ``window`` on CPU, or after ``limit`` seconds.

    :returns: the seconds waited.
    """
    started = time.monotonic()
    while True:
        cpu = isolate.cpu_seconds()
        time.sleep(window)
        waited = time.monotonic() - started
        if isolate.cpu_seconds() - cpu < busy * window or waited >= limit:
            return waited


def locks_held(pids):
    """The processes of ``pids`` that hold a write lock on a file.

    From the kernel's table (``/proc/locks``). A read lock never keeps a
    reader out, and SQLite holds some for as long as a connection is open
    (in WAL mode, a shared lock on the database and one on its ``-shm``
    file), so only write locks count: SQLite's reserved, pending and
    exclusive locks, and the WAL index locks of a writer. A line for a lock
    being waited for (``->``) is not one held.
    """
    wanted = {str(pid) for pid in pids}
    held = set()
    with open('/proc/locks') as locks:
        for line in locks:
            fields = line.split()
            if len(fields) > 4 and fields[1] != '->' and (
                    fields[3] == 'WRITE' and fields[4] in wanted):
                held.add(int(fields[4]))
    return held


def state(pid):
    """The states (``/proc/PID/task/*/stat``) of a process's threads.

    :returns: a set of one-letter states (``T``: stopped); empty if the
        process is gone.
    """
    try:
        tasks = os.listdir('/proc/%d/task' % pid)
    except FileNotFoundError:
        return set()
    fields = (procs.stat_fields('/proc/%d/task/%s/stat' % (pid, task))
              for task in tasks)
    return {f[0] for f in fields if f}


def _all_stopped(pids):
    """Wait until every thread of ``pids`` is stopped; False if not soon."""
    deadline = time.monotonic() + STOP_WAIT
    while time.monotonic() < deadline:
        if all(state(pid) <= {'T', 't', 'Z', 'X'} for pid in pids):
            return True
        time.sleep(STOP_POLL)
    return False


def _signal(pids, signum):
    for pid in pids:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass


def _cpu_ticks(pid):
    fields = procs.stat_fields('/proc/%d/stat' % pid)
    return None if fields is None else procs.cpu_ticks(fields)


def _guard(pids, watch, stall):
    """Fork the guardian that resumes ``pids`` if ``watch`` stops working.

    It needs no lock another thread of this process could have held at
    the fork: it only sleeps, reads ``/proc`` and sends signals.
    """
    pid = os.fork()
    if pid:
        return pid
    try:
        mine = os.getppid()
        last, since = _cpu_ticks(watch), time.monotonic()
        while os.getppid() == mine:
            time.sleep(GUARD_POLL)
            ticks = _cpu_ticks(watch)
            if ticks is None:
                break
            if ticks != last:
                last, since = ticks, time.monotonic()
            elif time.monotonic() - since > stall:
                break
        _signal(pids, signal.SIGCONT)
    finally:
        os._exit(0)
