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

A process that exits cleanly, or a Nova service that stops, records what
it has not recorded yet before it goes (:func:`record_at_exit`):
``nova-manage db archive_deleted_rows`` exits right after its writes, a
conductor stopped by oslo.service leaves by ``os._exit``, and what either
could not record while the index was unreachable would otherwise be lost
with it.
"""

import atexit
import functools
import threading
import time

from oslo_log import log as logging

from nova_ext import exception
from nova_ext.index.apply import worker
from nova_ext.index.marks import batcher
from nova_ext.index.marks import holders
from nova_ext.index.marks import watch
from nova_ext.index.marks import witness
from nova_ext.seams.internals import service_stop

LOG = logging.getLogger(__name__)

#: Seconds an exiting process waits for its changes before it says so.
EXIT_NOTICE = 1.0

#: Seconds between two attempts of an exiting process to record.
EXIT_RETRY = 0.5

#: How many lost instances an exiting process names in its error.
LOST_NAMED = 20

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
        if _BATCHER is not None and _BATCHER.alive:
            return _BATCHER
        wake = None
        if applies_marks(conf):
            wake = lambda: get_worker(conf).wake()  # noqa: E731
        # The lease first: atexit runs its hooks last in, first out, and
        # the holder row is to go only after the batcher's last record,
        # whose holds name it.
        lease = holders.get_lease(conf)
        _BATCHER = running = batcher.Batcher(conf, wake=wake)
        # A holder vouches only once it has recorded what it learned of.
        lease.ready = running.recorded_all
        atexit.register(record_at_exit, conf, running)
    # Where capture did not attach first (record_at_stops).
    record_at_stops(conf)
    return running


def record_at_stops(conf):
    """Have this process record what it holds when a Nova service stops.

    A Nova service run by oslo.service leaves by ``os._exit`` once it has
    stopped, without the atexit hooks. Called as capture attaches, before
    the service starts: a worker leaves as soon as its ``wait()`` raises,
    which only a ``wait()`` begun after this waits out
    (``service_stop``), and a conductor makes its first write long after
    its ``wait()`` began.
    """
    try:
        service_stop.after_stop(__name__, functools.partial(_stopped, conf))
    except exception.UnsupportedNovaVersion as e:
        LOG.warning('%s; a Nova service that stops leaves what it has not '
                    'recorded in the index to the reconcile pass', e)


def _stopped(conf):
    with _LOCK:
        running = _BATCHER
    if running is not None:
        record_at_exit(conf, running)
    # Without the atexit hooks: the holder's row goes now, or nova-api
    # lists from Nova's path until it is taken for dead.
    holders.leave()


def record_at_exit(conf, running):
    """Record what ``running`` holds, waiting up to ``max_lag`` seconds.

    Run at a clean exit, and once a Nova service of the process has
    stopped (``service_stop``). Changes the index takes at once cost no
    wait; an index that is unreachable (restarting, its grants revoked) is
    waited for, as long as a nova-api may list with changes unrecorded, and
    then given up on with an error: the reconcile pass finds what was lost.
    Releases of held marks are not waited for: once this process's holder
    stops beating, the watchers renew what it held (``holders``).
    """
    if not running.alive:
        # A forked child's inherited hook: its parent's batcher.
        return
    lag = conf.nova_ext_index.max_lag
    if running.flush(min(EXIT_NOTICE, lag)) or not running.held():
        return
    LOG.warning('nova_ext index: exiting with the changes of %d instances '
                'not recorded in the index; waiting up to %.0f s '
                '([nova_ext_index]max_lag) for it', len(running.held()), lag)
    deadline = time.monotonic() + max(0.0, lag - EXIT_NOTICE)
    while running.held():
        left = deadline - time.monotonic()
        if left <= 0:
            lost = sorted(running.held())
            LOG.error('nova_ext index: exiting with the changes of %d '
                      'instances not recorded in the index (%s); the next '
                      'reconcile pass finds them, and nova-ext-manage index '
                      'verify --fix does now', len(lost),
                      ', '.join(lost[:LOST_NAMED] + (
                          ['...'] if len(lost) > LOST_NAMED else [])))
            return
        # Tried again every EXIT_RETRY seconds, not after the batcher's
        # growing pauses: the index may be back during one.
        running.retry()
        running.flush(min(left, EXIT_RETRY))
    LOG.info('nova_ext index: changes recorded; exiting')


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
    """Record what is buffered, then stop the batcher and the worker.

    Nova's ``Service.stop`` is given back.
    """
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
    witness.reset()
    watch.reset()
    holders.reset()
    service_stop.remove()
