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

The contract test is
``nova_ext.tests.unit.seams.test_internals_service_stop``.
"""

import functools
import threading

from nova import service as nova_service
from oslo_log import log as logging

from nova_ext.seams import internals

LOG = logging.getLogger(__name__)

POINT = 'nova.service.Service.stop'

_LOCK = threading.Lock()
#: ``{name: fn}``, called in the order given.
_AFTER = {}
#: Nova's own ``Service.stop``, once wrapped.
_STOP = None


def _check():
    internals.check(POINT)


def after_stop(name, fn):
    """Call ``fn()`` each time a Nova service of this process has stopped.

    :param name: another ``fn`` given under it before is replaced.
    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    global _STOP
    _check()
    with _LOCK:
        _AFTER[name] = fn
        if _STOP is None:
            _STOP = nova_service.Service.stop
            nova_service.Service.stop = _then_after(_STOP)


def _then_after(stop):
    @functools.wraps(stop)
    def stop_then_after(self, *args, **kwargs):
        try:
            return stop(self, *args, **kwargs)
        finally:
            # Also after a stop that failed: the process exits all the
            # same.
            with _LOCK:
                after = list(_AFTER.values())
            for fn in after:
                try:
                    fn()
                except Exception:
                    LOG.exception('nova_ext: after the %s service stopped',
                                  getattr(self, 'binary', None))
    return stop_then_after


def remove():
    """Give Nova its own ``Service.stop`` back (tests)."""
    global _STOP
    with _LOCK:
        _AFTER.clear()
        if _STOP is not None:
            nova_service.Service.stop = _STOP
            _STOP = None
