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
"""``nova.service.Service.stop``: the end of a Nova service's process.

oslo.service stops a Nova service (nova-conductor, nova-scheduler,
nova-compute) by calling its ``stop()``: on SIGTERM in its graceful
shutdown, and in each forked worker as cotyledon ends it. Then it leaves
the process with ``os._exit``, so the interpreter's atexit hooks never
run there. :func:`after_stop` has a function called each time a service
of the process has stopped, before that exit: Nova's ``Service.stop`` is
wrapped, once, when the first such function is given.

A worker also leaves as soon as the service's ``wait()``, in another
thread, ends by an exception: oslo.service's ``ServiceWrapper.run`` then
calls ``sys.exit(1)``, which cotyledon turns into ``os._exit``. That
happens during a stop: Nova's periodic tasks return no interval while a
graceful shutdown is in progress, and oslo.service's dynamic timer raises
for it, which ``wait()`` raises once ``stop()`` has stopped the timers,
while the functions given here run. So ``Service.wait`` is wrapped too:
a ``wait()`` that ends while a stop of the same service is in progress
returns, or raises, only once the functions have run; one that ends by an
exception without a stop runs them itself, the process leaving all the
same.

The contract test is
``nova_ext.tests.unit.seams.test_internals_service_stop``.
"""

import functools
import threading
import weakref

from nova import service as nova_service
from oslo_log import log as logging

from nova_ext.seams import internals

LOG = logging.getLogger(__name__)

POINT = 'nova.service.Service.stop and wait'

_LOCK = threading.Lock()
#: ``{name: fn}``, called in the order given.
_AFTER = {}
#: Nova's own ``Service.stop``, once wrapped.
_STOP = None
#: What ``Service.wait`` was before it was wrapped: Nova's class inherits
#: oslo.service's, so ``None`` there means none of its own.
_WAIT = None
#: ``{service: Event}`` of the stops begun, the event set once the
#: functions have run after it.
_STOPPING = weakref.WeakKeyDictionary()


def _check():
    internals.check(POINT)


def after_stop(name, fn):
    """Call ``fn()`` each time a Nova service of this process has stopped.

    Or once its ``wait()`` has ended by an exception, without a stop: the
    process leaves then too.

    :param name: another ``fn`` given under it before is replaced.
    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    global _STOP, _WAIT
    _check()
    with _LOCK:
        _AFTER[name] = fn
        if _STOP is None:
            _STOP = nova_service.Service.stop
            _WAIT = nova_service.Service.__dict__.get('wait')
            nova_service.Service.stop = _then_after(_STOP)
            nova_service.Service.wait = _until_after(
                nova_service.Service.wait)


def _run_after(service):
    with _LOCK:
        after = list(_AFTER.values())
    for fn in after:
        try:
            fn()
        except Exception:
            LOG.exception('nova_ext: after the %s service stopped',
                          getattr(service, 'binary', None))


def _then_after(stop):
    @functools.wraps(stop)
    def stop_then_after(self, *args, **kwargs):
        done = threading.Event()
        with _LOCK:
            _STOPPING[self] = done
        try:
            return stop(self, *args, **kwargs)
        finally:
            # Also after a stop that failed: the process exits all the
            # same.
            try:
                _run_after(self)
            finally:
                done.set()
    return stop_then_after


def _until_after(wait):
    @functools.wraps(wait)
    def wait_until_after(self, *args, **kwargs):
        failed = True
        try:
            result = wait(self, *args, **kwargs)
            failed = False
            return result
        finally:
            with _LOCK:
                stopping = _STOPPING.get(self)
            # The caller may leave the process as soon as this returns.
            if stopping is not None:
                stopping.wait()
            elif failed:
                _run_after(self)
    return wait_until_after


def remove():
    """Give Nova its own ``Service.stop`` and ``wait`` back (tests)."""
    global _STOP, _WAIT
    with _LOCK:
        _AFTER.clear()
        _STOPPING.clear()
        if _STOP is not None:
            nova_service.Service.stop = _STOP
            if _WAIT is None:
                del nova_service.Service.wait
            else:
                nova_service.Service.wait = _WAIT
            _STOP = _WAIT = None
