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
"""The lines nova_ext logs when it attaches to a Nova process.

Nova builds its notifiers, and so loads the ``nova_ext`` notification
driver, in ``nova.config.parse_args`` (``rpc.init``), before the process
calls oslo.log's ``setup``. Until then the root logger's level is WARNING
and its only handler the temporary stderr one of oslo.log's
``register_options``, which ``setup`` removes: an INFO line logged then is
lost. :func:`info` logs its line at once if the root logger has a handler
and lets the line through; otherwise it holds the line, and a thread of
its own logs it once logging is set up, so that nothing of Nova's waits
for it.

oslo.log's ``setup`` replaces ``sys.excepthook`` as its last step, after
the handlers, their formatters and the levels: a hook other than the one
of the moment the line was held is the sign, as is a root logger that
would now log it. The thread looks every :data:`POLL` seconds; a process
whose logging is not set up within :data:`WAIT` seconds gets its lines
then, wherever its logging sends them. Lines held in a process that forks
are logged by that process, not by its children.
"""

import logging as std_logging
import os
import sys
import threading
import time

#: Seconds between two looks at the process's logging while lines are held.
POLL = 0.1
#: Seconds a line is held at most.
WAIT = 300.0

_LOCK = threading.Lock()
#: ``[(logger, msg, args)]`` held by process ``_PID``.
_HELD = []
_PID = None
_THREAD = None


def info(logger, msg, *args):
    """Log ``msg % args`` at INFO on ``logger``, now or once logging is set.

    :param logger: an oslo.log (or standard) logger.
    """
    global _PID, _THREAD
    with _LOCK:
        if _PID != os.getpid():
            # Inherited from the parent process, which logs them.
            _PID, _THREAD = os.getpid(), None
            del _HELD[:]
        # Behind lines still held, to keep their order.
        hold = bool(_HELD) or not _logs()
        if hold:
            _HELD.append((logger, msg, args))
            if _THREAD is None:
                _THREAD = threading.Thread(
                    target=_wait_for_setup,
                    args=(sys.excepthook, time.monotonic() + WAIT),
                    name='nova-ext-startup-log', daemon=True)
                _THREAD.start()
    if not hold:
        logger.info(msg, *args)


def _logs():
    """Whether an INFO line would reach a handler of the root logger."""
    root = std_logging.getLogger()
    return bool(root.handlers) and root.isEnabledFor(std_logging.INFO)


def _wait_for_setup(hook, deadline):
    while (sys.excepthook is hook and not _logs() and
           time.monotonic() < deadline):
        time.sleep(POLL)
    global _THREAD
    with _LOCK:
        held = list(_HELD)
        del _HELD[:]
        _THREAD = None
    for logger, msg, args in held:
        logger.info(msg, *args)


def wait(timeout=None):
    """Wait until no line is held (for tests); whether none is."""
    with _LOCK:
        thread = _THREAD if _PID == os.getpid() else None
    if thread is not None:
        thread.join(timeout)
        return not thread.is_alive()
    return True
