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
"""Run a nova_ext command as an oslo.service service, as Nova runs its own.

Import this module only after :func:`nova_ext.service.use_native_threads`.

:func:`serve` hands the service to ``oslo_service.service.launch`` with
``restart_method='mutate'``, as ``nova.service.serve`` does. On the
threading backend its ServiceLauncher keeps the command's process as a
master and runs the service in one worker process forked from it:

* SIGHUP: the master reads the configuration files again
  (``mutate_config_files``: mutable options take their new values, others
  keep theirs with a warning), logs it (:func:`_reloaded`), and restarts the
  worker, which stops as on SIGTERM; the new worker is forked from the
  master, and so runs with the new values.
* SIGTERM: the master stops the worker gracefully (within
  ``[DEFAULT]graceful_shutdown_timeout``) and exits 0.
* SIGINT: both exit 1 at once.
* A worker that dies is forked again.
"""

import functools
import logging as std_logging
import os
import threading

from oslo_log import log as logging
from oslo_service import service

from nova_ext.cmd import common

LOG = logging.getLogger(__name__)


def configure(prog, argv, cli_opts=()):
    """Nova's configuration from a service's command line; returns CONF.

    oslo.config's ``--config-file`` and ``--config-dir``, oslo.log's
    ``--debug``, ``--log-file`` and the like, and the command's own
    ``cli_opts``; the API and main database facades and the transport
    options, no RPC (``common.parse_args``; a command that listens builds
    its own transport).

    :param argv: the arguments, without the program name.
    """
    from nova import config
    from nova import objects

    config.CONF.register_cli_opts(cli_opts)
    common.parse_args([prog] + list(argv), prog=prog)
    logging.setup(config.CONF, prog, version=common.version())
    objects.register_all()
    return config.CONF


class Service(service.Service):
    """Runs what ``build()`` returns (``start()`` and ``stop()``).

    It is built in the worker process, at each start: nothing it opens
    (connections, threads) is shared with the master it was forked from,
    and each worker reads the configuration as the master holds it then.
    """

    def __init__(self, prog, build):
        super().__init__()
        self.prog = prog
        self.build = build
        self.running = None
        self._stopped = threading.Event()

    def start(self):
        super().start()
        try:
            self.running = self.build()
            self.running.start()
        except Exception:
            # oslo.service prints the traceback on stderr only; the worker
            # then exits 1 and the master forks another.
            LOG.exception('%s could not start (worker pid %d)', self.prog,
                          os.getpid())
            raise
        LOG.info('%s running (worker pid %d)', self.prog, os.getpid())

    def stop(self, graceful=False):
        LOG.info('%s stopping (worker pid %d)', self.prog, os.getpid())
        try:
            if self.running is not None:
                self.running.stop()
        finally:
            self._stopped.set()
            super().stop(graceful)

    def wait(self):
        # The thread group is empty (what runs has threads of its own), so
        # waiting for it alone would return at once.
        self._stopped.wait()
        super().wait()


def _reloaded(prog, conf, fresh):
    """The mutate hook: runs in the master once the files are read again.

    :param fresh: ``{(group, option): (old, new)}`` of the mutable options
        that changed.
    """
    # oslo.log writes log_file through a WatchedFileHandler, which reopens
    # a file moved away (logrotate) only when it next writes: reopen now,
    # so that the worker forked next inherits the new file.
    for handler in std_logging.getLogger().handlers:
        reopen = getattr(handler, 'reopenIfNeeded', None)
        if reopen is not None:
            reopen()
    changed = sorted('%s.%s' % (group or 'DEFAULT', name)
                     for group, name in fresh)
    LOG.info('%s reloaded its configuration on SIGHUP (changed: %s); the '
             'worker restarts with it', prog, ', '.join(changed) or 'none')


def serve(prog, conf, build):
    """Run ``build()`` in an oslo.service worker; returns the exit code.

    Returns when the service is stopped (0 after SIGTERM).
    """
    conf.register_mutate_hook(functools.partial(_reloaded, prog))
    LOG.info('%s %s starting (master pid %d)', prog, common.version(),
             os.getpid())
    launcher = service.launch(conf, Service(prog, build),
                              restart_method='mutate')
    code = launcher.wait()
    LOG.info('%s stopped', prog)
    return code
