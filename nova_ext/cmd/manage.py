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
"""nova-ext-manage: operate nova_ext's databases.

``nova-ext-manage [--config-file nova.conf ...] index <command>``:

- ``db_sync``: create or upgrade the index schema.
- ``sync [--cell C] [--since T] [--restart]``: copy instances from the cell
  databases into the index, in batches, resumable.
- ``verify [--cell C] [--fix] [--format table|json]``: compare the index
  with the cells (exit 1 on drift left unfixed).
- ``status [--format table|json]``: schema, lag, pending changes, per-cell
  counts and the list counters reported by nova-api processes.
- ``purge``: drop tombstones older than ``[nova_ext_index]
  deleted_retention``.

``nova-ext-manage api_db sync [--revision R]`` creates or upgrades
nova_ext's tables in Nova's API database (rebuild from cell0), and
``api_db version`` prints their revision.

``nova-ext-manage db online_data_migrations [--max-count N]`` runs the
``[nova_ext_object_migrations]`` migrations in every cell
(``manage_db.py``); ``nova-ext-manage compute-ids audit [--format
table|json]`` reports compute object id linkage (``compute_ids.py``).

It reads the same nova.conf as nova-manage (API database and cell
mappings) and talks to the cell databases directly, never to the Nova API.
As nova-manage's, its command line is oslo.config's: the categories are a
``SubCommandOpt``, after oslo.config's ``--config-file`` and
``--config-dir`` and oslo.log's ``--debug``, ``--log-file`` and the like;
``--version`` prints nova_ext's version.

Every command that prints a result takes ``--format table|json``; the
result alone goes to stdout, logs to stderr.

Exit codes, as nova-manage's: 0 done, 1 work or drift remains, 2 a usage
error (and, for ``db online_data_migrations``, a migration that raised, as
nova-manage's; 127 a bad ``--max-count``), 255 an error (a configuration
file missing, an index without its schema, a database that cannot be
read), said in one line on stderr.
"""

import argparse
import sys

from oslo_config import cfg
from oslo_log import log as logging

from nova_ext.cmd import common
# Registers nova_ext's option groups on Nova's configuration.
from nova_ext import conf as ext_conf  # noqa: F401

LOG = logging.getLogger(__name__)

PROG = 'nova-ext-manage'

#: nova-manage's exit code for an error.
ERROR = 255


def add_command_parsers(subparsers):
    """The categories, their commands and their arguments.

    oslo.config calls it with the sub-parsers of ``category_opt``; the
    parsed values are the attributes of ``CONF.category`` (its ``name`` is
    the category), which the category's handler gets as its ``args``.
    """
    index = subparsers.add_parser('index', help='the instance index')
    commands = index.add_subparsers(dest='command', required=True)
    sync = commands.add_parser('db_sync', help='create/upgrade the schema')
    sync.add_argument('--revision', default='head')
    sync = commands.add_parser('sync', help='copy cells into the index')
    sync.add_argument('--cell', help='cell name or uuid (default: all)')
    sync.add_argument('--since', help='only instances changed since this '
                                      'ISO 8601 time')
    sync.add_argument('--restart', action='store_true',
                      help='ignore the saved position and start over')
    verify = commands.add_parser('verify', help='compare with the cells')
    verify.add_argument('--cell', help='cell name or uuid (default: all)')
    verify.add_argument('--fix', action='store_true',
                        help='re-read every instance that differs')
    status = commands.add_parser('status', help='health of the index')
    for sub in (verify, status):
        _add_format(sub)
    commands.add_parser('purge', help='drop expired tombstones')
    db = subparsers.add_parser('db', help='online data migrations')
    commands = db.add_subparsers(dest='command', required=True)
    odm = commands.add_parser('online_data_migrations',
                              help='run the enabled migrations in every cell')
    odm.add_argument('--max-count', type=int, dest='max_count',
                     help='one batch of at most this many records per cell')
    _add_format(odm)
    api_db = subparsers.add_parser('api_db',
                                   help="nova_ext's tables in the API "
                                        "database")
    commands = api_db.add_subparsers(dest='command', required=True)
    sync = commands.add_parser('sync', help='create/upgrade the tables')
    sync.add_argument('--revision', default='head')
    version = commands.add_parser('version', help="print the tables' "
                                                  "revision")
    for sub in (sync, version):
        _add_format(sub)
    ids = subparsers.add_parser('compute-ids',
                                help='compute object id linkage')
    commands = ids.add_subparsers(dest='command', required=True)
    audit = commands.add_parser('audit', help='read-only linkage report')
    _add_format(audit)


def _add_format(parser):
    parser.add_argument('--format', choices=('table', 'json'),
                        default='table')


category_opt = cfg.SubCommandOpt('category', title='Command categories',
                                 help='Available categories',
                                 handler=add_command_parsers)


def build_parser():
    """The categories as an argparse parser, as oslo.config builds them.

    For the CLI reference, and for tests and tools that run a category's
    handler without nova.conf: ``parse_args(argv)`` gives the handler's
    ``args``. oslo.config's and oslo.log's own options (``--config-file``,
    ``--debug``, ...) are not in it.
    """
    parser = argparse.ArgumentParser(prog=PROG,
                                     description=__doc__.split('\n')[0])
    subparsers = parser.add_subparsers(
        dest=category_opt.dest, title=category_opt.title,
        help=category_opt.help, required=True)
    add_command_parsers(subparsers)
    return parser


def _fail(error):
    print('%s: %s: %s' % (PROG, type(error).__name__, error),
          file=sys.stderr)
    return ERROR


def main(argv=None):
    from nova import config

    argv = sys.argv[1:] if argv is None else argv
    common.exit_on_version(PROG, argv)
    config.CONF.register_cli_opt(category_opt)
    try:
        return _run(argv)
    finally:
        # Whoever parses Nova's CONF next in this process (a test, another
        # command) gets it without this command's line or sub-commands.
        config.CONF.clear()
        config.CONF.unregister_opt(category_opt)


def _run(argv):
    try:
        conf = common.configure(PROG, argv, reports=True)
    except cfg.Error as e:
        # A configuration file missing or unreadable: what is wrong, not
        # oslo.config's traceback.
        return _fail(e)
    from nova import context as nova_context

    from nova_ext.cmd import compute_ids
    from nova_ext.cmd import manage_db
    from nova_ext.cmd import manage_index
    categories = {'index': manage_index.run, 'db': manage_db.run,
                  'api_db': manage_db.run_api_db,
                  'compute-ids': compute_ids.run}
    args = conf.category
    if args.name == 'db':
        from nova_ext.seams import db_writes

        # The online data migrations write Nova's rows, which the index
        # holds: captured as any Nova process's writes are (nova-manage gets
        # capture with its notifier; this command builds none).
        db_writes.attach(conf)
    try:
        return categories[args.name](nova_context.get_admin_context(), conf,
                                     args)
    except Exception as e:
        LOG.debug('%s failed', PROG, exc_info=True)
        return _fail(e)
