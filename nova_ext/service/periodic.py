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
"""A call repeated at a fixed spacing, on threads of its own (futurist).

futurist's periodics rather than oslo.service's looping calls: a looping
call runs on the oslo.service backend of the process, and a process that
imported Nova without choosing one (a test runner, a tool embedding these
components) gets eventlet's, whose green threads never run unless eventlet
is patched in. futurist runs on ``threading``, native or patched alike.
"""

import functools
import threading
import time

import futurist
from futurist import periodics

#: Raise it from the call to have it never called again (the thread
#: idles until :meth:`Periodic.stop`).
NeverAgain = periodics.NeverAgain


class Periodic(object):
    """Calls ``fn()`` every ``spacing`` seconds until stopped.

    :param run_immediately: the first call at start rather than one
        spacing later.
    :param strategy: futurist's schedule strategy: ``last_finished``
        counts the spacing from the end of one call to the start of the
        next, so that calls never pile up; ``last_started`` keeps a fixed
        rate.

    ``fn`` should catch what it can recover from: futurist logs what
    escapes it (at ERROR) and calls it again at the next turn.
    """

    def __init__(self, fn, spacing, name, run_immediately=True,
                 strategy='last_finished'):
        # A function of its own: futurist tags it with attributes, which a
        # bound method cannot take. It keeps fn's name for futurist's logs.
        # Clear while a call runs: stop() waits for it, whether or not
        # futurist's worker thread has ended before it.
        self._idle = threading.Event()
        self._idle.set()

        @periodics.periodic(spacing, run_immediately=run_immediately)
        @functools.wraps(fn)
        def call():
            self._idle.clear()
            try:
                return fn()
            finally:
                self._idle.set()
        # Calls on a thread of a pool, not the worker's own: there they
        # would hold the lock that stop() takes, and stop() could not return
        # before the call under way does. The pool is shut down without
        # waiting for its idle thread, which polls for work once a second.
        self._pool = futurist.ThreadPoolExecutor(max_workers=1)
        self._worker = periodics.PeriodicWorker(
            [(call, (), {})], schedule_strategy=strategy,
            executor_factory=periodics.ExistingExecutor(self._pool))
        # PeriodicWorker.start() runs the loop in the thread that calls it.
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name,
                                        daemon=True)

    def _run(self):
        try:
            self._worker.start()
        finally:
            self._done.set()

    def start(self):
        self._thread.start()

    def stop(self, timeout=None):
        """Stop; the call under way ends first. False if it still runs.

        A call still running after ``timeout`` seconds ends with the
        process: its threads are daemons.
        """
        # Stopped before its thread began, the worker returns at once.
        deadline = None if timeout is None else time.monotonic() + timeout
        self._worker.stop()
        # An event rather than join(timeout): eventlet's green join raises
        # its Timeout on Python 3.13 instead of returning.
        if self._thread.ident is not None and not self._done.wait(timeout):
            return False
        left = None
        if deadline is not None:
            left = max(0.0, deadline - time.monotonic())
        if not self._idle.wait(left):
            return False
        self._pool.shutdown(wait=False)
        return True
