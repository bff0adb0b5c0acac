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
"""Run benchmark jobs in processes forked from the benchmark's own.

A second process could open the benchmark cloud's SQLite files, but not
serve them as Nova: the harness finds each cell's database through its
own ``target_cell`` (the cell mappings name no real database), so that
process would have to rebuild the harness. A fork gives a path a process
of its own on the same data, as it is. A forked child starts from
the parent's heap as it was at the fork, so what one path leaves behind
(garbage, a fragmented heap, grown caches) never slows the next; and with
native threads only the forking thread lives on in the child, so the
harness's computes, conductor and scheduler do not run inside the process
making the timed requests, as they would not in a real nova-api. They do
go on running in the parent, on the same machine, unless the child stops
it (quiet.py).

A child reports back through a pipe, as JSON, and leaves with
``os._exit``: it never runs the parent's fixture cleanups or exit hooks.
"""

import faulthandler
import json
import os
import select
import signal
import sys
import time
import traceback


class ChildFailed(RuntimeError):
    """A forked job raised, died or ran out of time."""


class ChildStalled(ChildFailed):
    """A forked job made no progress for too long (see :func:`heartbeat`).

    A fork copies locks as they are: a child forked while another thread
    held one inside a library (SQLite's memory mutex, for instance) waits
    on it for ever. Another fork, at another moment, does not.
    """


#: In a child, the pipe to its parent; None in the parent.
_PIPE = None
#: Seconds a stalled child is given to print its threads' stacks.
DUMP_WAIT = 2


def heartbeat():
    """Tell the parent the job is making progress (no-op in the parent)."""
    if _PIPE is not None:
        os.write(_PIPE, b'.')


def call(fn, timeout, usage=None, stall=None):
    """``fn()`` run in a child forked from this process.

    :param fn: called with no arguments in the child; returns something
        JSON can carry.
    :param timeout: seconds the child may take before it is killed.
    :param usage: a ``collections.Counter`` to which the child's wall-clock
        seconds (``wall``) and the CPU seconds this process used meanwhile
        (``parent_cpu``: its other threads, since this one only waits) are
        added.
    :param stall: seconds the child may go without a :func:`heartbeat`
        (``fn`` must call it) before it is killed; None: no limit.
    :returns: what ``fn`` returned, through JSON.
    :raises ChildFailed: with the child's traceback if ``fn`` raised, or
        if the child died or timed out.
    :raises ChildStalled: if the child stalled.
    """
    # Unflushed output would be written by both processes.
    sys.stdout.flush()
    sys.stderr.flush()
    read_fd, write_fd = os.pipe()
    started, cpu = time.monotonic(), cpu_seconds()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _child(fn, write_fd)
    os.close(write_fd)
    try:
        data = _read(read_fd, pid, timeout, stall)
    finally:
        os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    if usage is not None:
        usage['wall'] += time.monotonic() - started
        usage['parent_cpu'] += cpu_seconds() - cpu
    try:
        payload = json.loads(data.lstrip(b'.').decode('utf-8'))
    except ValueError:
        raise ChildFailed('the forked job died (wait status %d) without '
                          'reporting back' % status)
    if 'error' in payload:
        raise ChildFailed('the forked job failed:\n%s' % payload['error'])
    return payload['result']


def cpu_seconds():
    times = os.times()
    return times.user + times.system


def _child(fn, write_fd):
    global _PIPE
    code = 1
    try:
        _PIPE = write_fd
        try:
            # Where a stalled child waits: printed on SIGUSR1, from C, so even
            # a thread stuck in a library while holding the GIL shows. To
            # descriptor 2, not sys.stderr: a test runner capturing output
            # replaces sys.stderr with an object that has no descriptor.
            faulthandler.register(signal.SIGUSR1, file=2, all_threads=True)
            payload, code = {'result': fn()}, 0
        except BaseException:
            payload = {'error': traceback.format_exc()}
        data = json.dumps(payload).encode('utf-8')
        with os.fdopen(write_fd, 'wb') as pipe:
            pipe.write(data)
    finally:
        # Never back into the parent's stack: its cleanups would run twice.
        os._exit(code)


def _read(read_fd, pid, timeout, stall):
    chunks = []
    now = time.monotonic()
    deadline = now + timeout
    while True:
        wait = deadline - now
        if stall is not None:
            wait = min(wait, stall)
        ready = select.select([read_fd], [], [], max(wait, 0))[0]
        now = time.monotonic()
        if not ready:
            if now < deadline:
                os.kill(pid, signal.SIGUSR1)
                time.sleep(DUMP_WAIT)
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            if now < deadline:
                raise ChildStalled('the forked job made no progress for '
                                   '%.0f s and was killed' % stall)
            raise ChildFailed('the forked job took more than %.0f s and '
                              'was killed' % timeout)
        chunk = os.read(read_fd, 1 << 16)
        if not chunk:
            return b''.join(chunks)
        chunks.append(chunk)


def in_processes(jobs, processes, timeout, usage=None, stall=None,
                 attempts=2):
    """Run every job in ``processes`` children each, one child at a time.

    The jobs take turns, in reverse order every other turn, so that drift
    in the machine's speed is shared between them. A child that stalls
    is forked again, up to ``attempts`` times in all.

    :param jobs: ``{name: fn}``, each as for :func:`call`.
    :param usage: as for :func:`call`, for all the children.
    :param stall: as for :func:`call`.
    :returns: ``{name: [result of each child, in order]}``.
    """
    results = {name: [] for name in jobs}
    names = list(jobs)
    for turn in range(processes):
        for name in names if turn % 2 == 0 else names[::-1]:
            results[name].append(call_again_if_stalled(
                name, jobs[name], timeout, usage, stall, attempts))
    return results


def call_again_if_stalled(name, fn, timeout, usage=None, stall=None,
                          attempts=2):
    """:func:`call`, forked again if it stalls, ``attempts`` times in all.

    :param name: what the job is called in the message printed when it
        is forked again.
    """
    for attempt in range(1, attempts + 1):
        try:
            return call(fn, timeout, usage, stall)
        except ChildStalled as error:
            if attempt == attempts:
                raise
            print('%s: %s; forking it again' % (name, error))
