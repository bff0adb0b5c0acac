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
"""This process's index batcher and worker, and what it has not recorded.

One batcher (``nova_ext.index.marks.batcher``) per process records the
changes the process learns of, from its own database writes (``capture``)
and from notifications (``consumer``), in the index's pending table; where
the process can apply them (``applies_marks``), one worker
(``nova_ext.index.apply.worker``) applies them in the background. A list
request asks what the process has not recorded yet (:func:`held`) before
it reads the index (``nova_ext.instance_list.catch_up``).
"""

import threading

from nova_ext.index.apply import worker
from nova_ext.index.marks import batcher
from nova_ext.index.marks import holders

_LOCK = threading.Lock()
_WORKER = None
_BATCHER = None


def get_worker(conf):
    """This process's index worker, started on first use."""
    global _WORKER
    with _LOCK:
        # A forked child (uwsgi, oslo.service) inherits the object but not
        # its thread: start one of its own.
        if _WORKER is None or not _WORKER.alive:
            _WORKER = worker.Worker(conf)
        return _WORKER


def get_batcher(conf):
    """This process's :class:`Batcher`, started on first use.

    Its commits wake this process's index worker only where the in-process
    consumer runs and the marks can be applied: a process that only
    captures its writes (a conductor), or that cannot find which cell holds
    an instance (a cell conductor or a compute, without the API database),
    leaves the marks to the indexer and to the list requests.
    """
    global _BATCHER
    with _LOCK:
        # As get_worker(); what the parent had buffered is its own to
        # record.
        if _BATCHER is None or not _BATCHER.alive:
            wake = None
            if applies_marks(conf):
                wake = lambda: get_worker(conf).wake()  # noqa: E731
            _BATCHER = batcher.Batcher(conf, wake=wake)
        return _BATCHER


def applies_marks(conf):
    """Whether this process's worker applies the marks it records."""
    return ('index' in conf.nova_ext_notifications.consumers and
            bool(conf.api_database.connection))


def held():
    """Changes this process has not yet recorded: ``{uuid: (first, last)}``.

    Those buffered and those of a transaction under way, which fail back
    into the buffer if it does.
    """
    with _LOCK:
        running = _BATCHER
    return {} if running is None else running.held()


def reset():
    """Record what is buffered, then stop the batcher and the worker."""
    global _WORKER, _BATCHER
    with _LOCK:
        stopping, _BATCHER = _BATCHER, None
    if stopping is not None:
        # Its last commit still wakes the worker, which must not be
        # started again for it.
        stopping.stop()
    with _LOCK:
        running, _WORKER = _WORKER, None
    if running is not None:
        running.stop()
    holders.reset()
