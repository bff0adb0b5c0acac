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
"""What nova_ext's commands that read nova.conf share."""

import argparse
import sys

from oslo_config import cfg
from oslo_log import log as logging
import pbr.version

LOG = logging.getLogger(__name__)


def version():
    """nova_ext's full version (a development install names its commit)."""
    return pbr.version.VersionInfo('nova_ext').release_string()


def exit_on_version(prog, args):
    """Print nova_ext's version and exit 0 if ``--version`` is asked for.

    Nova's parse_args gives oslo.config Nova's own version for --version,
    so it is answered here, before Nova's parser sees it.
    """
    parser = argparse.ArgumentParser(prog=prog, add_help=False,
                                     allow_abbrev=False)
    parser.add_argument('--version', action='version', version=version())
    parser.parse_known_args(args)


def parse_args(argv, prog=None):
    """Nova's ``config.parse_args``, with the transport options but no RPC.

    Nova's commands (nova-manage included) run ``rpc.init``, whose first
    step, ``nova.rpc.get_transport_url``, registers oslo.messaging's
    transport options and parses ``[DEFAULT]transport_url``. Nova's
    ``CellMapping`` reads that option for each cell it loads, so without
    it no command can read the cell mappings. nova_ext's commands send
    nothing on Nova's message bus: they take that step alone, and so build
    no transport, load no notification driver and reach no broker.

    :param argv: the arguments, the program name first.
    :raises: oslo.config's ``cfg.Error`` if nova.conf cannot be read or its
        ``transport_url`` cannot be parsed.
    """
    from nova import config
    from nova import rpc
    import oslo_messaging

    config.parse_args(argv, init_rpc=False, prog=prog)
    try:
        rpc.get_transport_url()
    except oslo_messaging.InvalidTransportURL as e:
        # Said in one line, as any other error of nova.conf.
        raise cfg.Error('[DEFAULT]transport_url: %s' % e)
    return config.CONF


def configure(prog, argv, reports=False):
    """Load Nova's configuration the way nova-manage does; returns CONF.

    oslo.config parses ``argv`` (``--config-file``, ``--config-dir``,
    oslo.log's ``--debug``, ``--log-file`` and the like, and the CLI
    options registered on Nova's CONF before the call). Logging, CONF with
    project ``nova`` and the API and main database facades, the transport
    options; no RPC (:func:`parse_args`).

    :param argv: the arguments, without the program name.
    :param reports: the command prints a result on stdout (a table, JSON):
        its logs go to stderr unless nova.conf sends them elsewhere.
    :raises: oslo.config's ``cfg.Error`` if nova.conf cannot be read;
        ``SystemExit`` (argparse's, code 2) on a usage error.
    """
    from nova import config
    from nova import objects

    parse_args([prog] + list(argv), prog=prog)
    if reports:
        config.CONF.set_default('use_stderr', True)
    logging.setup(config.CONF, prog)
    objects.register_all()
    return config.CONF


def config_error(prog, error, code=2):
    """Say in one line that nova.conf cannot be read; the exit code."""
    print('%s: %s: %s' % (prog, type(error).__name__, error),
          file=sys.stderr)
    return code
