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
"""nova-ext-indexer: keep the instance index true from the message bus.

``nova-ext-indexer --config-file /etc/nova/nova.conf`` listens to Nova's
versioned notifications (``[notifications]versioned_notifications_topics``
on the notification transport), records each instance change in the index
and applies it from the cells. Run one or more per cloud; they share one
queue. ``--no-worker`` only records changes, for a deployment that applies
them elsewhere. With the worker it also reconciles the index with the cells
every ``[nova_ext_index]reconcile_interval`` seconds, one indexer of the
cloud at a time; ``--no-reconcile`` leaves that to the others (or to
``nova-ext-manage index verify --fix``).

It runs as Nova's services do, under oslo.service
(:mod:`nova_ext.service.launcher`): SIGHUP reloads the mutable options and
restarts the worker process, SIGTERM stops it (exit 0). ``--version``
prints nova_ext's version.
"""

import functools
import sys

from oslo_config import cfg

# Registers nova_ext's option groups on Nova's configuration.
from nova_ext import conf as ext_conf  # noqa: F401
from nova_ext import service

PROG = 'nova-ext-indexer'

CLI_OPTS = [
    cfg.BoolOpt('no-worker', default=False,
                help='Record changes, do not apply them (nor reconcile).'),
    cfg.BoolOpt('no-reconcile', default=False,
                help='Never run the periodic reconcile pass.'),
]


def schema_problem(conf):
    """Why the index schema cannot be written by this nova_ext, or None.

    An indexer whose code is newer than the schema would fail on every
    batch that needs a new table, and requeue it for ever.
    """
    from nova_ext.index.upkeep import migration

    return migration.problem(conf)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    # Nova's configuration path (control exchange "nova", the databases);
    # the listener builds its own transport.
    conf = service.configure(PROG, argv, CLI_OPTS)
    problem = schema_problem(conf)
    if problem:
        print('%s: %s' % (PROG, problem), file=sys.stderr)
        return 2
    from nova_ext.index import db
    from nova_ext.service import launcher

    # The worker process opens connections of its own, not copies of the
    # master's.
    db.reset()
    return launcher.serve(PROG, conf, functools.partial(_build, conf))


def _build(conf):
    """The indexer, with its endpoint: built in the worker process."""
    from nova import context as nova_context

    from nova_ext.index.feeds import listener
    from nova_ext.index.upkeep import exporter
    from nova_ext.service import endpoint

    indexer = listener.Indexer(conf, run_worker=not conf.no_worker,
                               run_reconcile=not conf.no_reconcile)
    return endpoint.serving(
        conf, indexer, conf.nova_ext_metrics.indexer_port,
        exporter.IndexerCollector(conf, nova_context.get_admin_context,
                                  indexer))
