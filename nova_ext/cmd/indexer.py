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
"""

import argparse
import sys

from nova_ext.cmd import common
# Registers nova_ext's option groups on Nova's configuration.
from nova_ext import conf as ext_conf  # noqa: F401


def schema_problem(conf):
    """Why the index schema cannot be written by this nova_ext, or None.

    An indexer whose code is newer than the schema would fail on every
    batch that needs a new table, and requeue it for ever.
    """
    from nova_ext.index import migration

    current, head = migration.current(conf), migration.head()
    if current != head:
        return ('the index schema is at revision %s, this nova_ext needs %s: '
                'run "nova-ext-manage index db_sync"' % (current, head))
    return None


def parse_args(argv):
    parser = argparse.ArgumentParser(prog='nova-ext-indexer',
                                     description=__doc__.split('\n')[0])
    common.add_config_arguments(parser)
    parser.add_argument('--no-worker', action='store_true',
                        help='record changes, do not apply them')
    parser.add_argument('--no-reconcile', action='store_true',
                        help='never run the periodic reconcile pass')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # Nova's configuration path (control exchange "nova", the databases);
    # the listener builds its own transport.
    conf = common.configure('nova-ext-indexer', args)
    problem = schema_problem(conf)
    if problem:
        print('nova-ext-indexer: %s' % problem, file=sys.stderr)
        return 2
    from nova_ext.index import listener

    indexer = listener.Indexer(conf, run_worker=not args.no_worker,
                               run_reconcile=not args.no_reconcile)
    return common.serve('nova-ext-indexer', indexer)
