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
"""nova-ext-status-watcher: compute status traits for down computes.

``nova-ext-status-watcher --config-file /etc/nova/nova.conf`` sweeps the
nova-compute services of every cell every
``[nova_ext_compute_status]watch_interval`` seconds and applies the trait
callbacks of ``[nova_ext_compute_status]trait_callbacks`` to their root
providers in placement: the first sweep reconciles, later ones mark
computes that stopped reporting in and unmark those that came back. Run
one or more per cloud; ``--once`` runs a single sweep and prints its
counts.
"""

import argparse
import sys

from nova_ext.cmd import common
# Registers nova_ext's option groups on Nova's configuration.
from nova_ext import conf as ext_conf  # noqa: F401


def parse_args(argv):
    parser = argparse.ArgumentParser(prog='nova-ext-status-watcher',
                                     description=__doc__.split('\n')[0])
    common.add_config_arguments(parser)
    parser.add_argument('--once', action='store_true',
                        help='run one sweep, print its counts and exit')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    conf = common.configure('nova-ext-status-watcher', args)
    from nova_ext.compute_status import watcher as watcher_mod

    if not conf.nova_ext_compute_status.trait_callbacks:
        print('nova-ext-status-watcher: no trait callbacks are enabled; set '
              '[nova_ext_compute_status]trait_callbacks', file=sys.stderr)
        return 2
    # An unknown or broken callback stops here, naming it.
    watcher = watcher_mod.Watcher.from_conf(conf)
    if args.once:
        stats = watcher.sweep()
        print(' '.join('%s=%d' % kv for kv in sorted(stats.items())))
        return 0
    return common.serve('nova-ext-status-watcher', watcher)
