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
"""nova_ext's long-running commands, run the way Nova runs its services.

``nova-ext-indexer`` and ``nova-ext-status-watcher`` run under oslo.service
with its native-thread backend (:func:`use_native_threads`, then
:mod:`nova_ext.service.launcher`); :mod:`nova_ext.service.periodic` runs the
fixed-interval loops of their components.

Nothing here may import ``oslo_service.service`` or
``oslo_service.loopingcall`` when imported: the first of those imports
fixes oslo.service's backend for the whole process.
"""


def use_native_threads():
    """Select oslo.service's threading backend for this process.

    As Nova's own commands do in native-thread mode, before anything
    imports oslo.service's components (importing ``nova.config`` does):
    the components of the backend selected first are the only ones. Both
    services run on native threads whatever ``[DEFAULT]concurrency_backend``
    says, since nothing of theirs is written for eventlet.

    :raises BackendAlreadySelected: if this process already runs another
        backend (eventlet).
    """
    from oslo_service import backend

    backend.init_backend(backend.BackendType.THREADING)


def configure(prog, argv, cli_opts=()):
    """A service's start up to its configuration; returns CONF.

    ``--version`` answered (nova_ext's), the threading backend selected,
    then Nova's configuration read (``launcher.configure``). A nova.conf
    that cannot be read is one line on stderr and exit code 2.

    :param argv: the arguments, without the program name.
    """
    import sys

    from oslo_config import cfg

    from nova_ext.cmd import common

    common.exit_on_version(prog, argv)
    # Before Nova is imported (by launcher.configure).
    use_native_threads()
    from nova_ext.service import launcher

    try:
        return launcher.configure(prog, argv, cli_opts)
    except cfg.Error as e:
        # A configuration file missing or unreadable: what is wrong, not
        # oslo.config's traceback.
        sys.exit(common.config_error(prog, e))
