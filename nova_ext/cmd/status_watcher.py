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

It runs as Nova's services do, under oslo.service
(:mod:`nova_ext.service.launcher`): SIGHUP reloads the mutable options and
restarts the worker process, SIGTERM stops it (exit 0). ``--version``
prints nova_ext's version.
"""

import json
import sys

from oslo_config import cfg

# Registers nova_ext's option groups on Nova's configuration.
from nova_ext import conf as ext_conf  # noqa: F401
from nova_ext import exception
from nova_ext import service

PROG = 'nova-ext-status-watcher'

CLI_OPTS = [
    cfg.BoolOpt('once', default=False,
                help='Run one sweep, print its counts and exit.'),
    cfg.StrOpt('format', default='text', choices=('text', 'json'),
               help='With --once: the counts as "name=count" words, or as '
                    'one JSON object.'),
]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    conf = service.configure(PROG, argv, CLI_OPTS)
    from nova_ext.compute_status import watcher as watcher_mod

    if not conf.nova_ext_compute_status.trait_callbacks:
        print('%s: no trait callbacks are enabled; set '
              '[nova_ext_compute_status]trait_callbacks' % PROG,
              file=sys.stderr)
        return 2
    try:
        # An unknown or broken callback stops here, naming it, rather than
        # in a worker process that would be forked again and again.
        watcher = watcher_mod.Watcher.from_conf(conf)
    except exception.NovaExtError as e:
        print('%s: %s' % (PROG, e), file=sys.stderr)
        return 2
    if conf.once:
        stats = dict(watcher.sweep())
        if conf.format == 'json':
            print(json.dumps(stats, sort_keys=True))
        else:
            print(' '.join('%s=%d' % kv for kv in sorted(stats.items())))
        return 0
    from nova_ext.service import launcher

    # Each worker builds its own: its heartbeat window starts with it.
    return launcher.serve(PROG, conf, lambda: _build(conf))


def _build(conf):
    """The watcher, with its endpoint: built in the worker process."""
    from nova_ext.compute_status import exporter
    from nova_ext.compute_status import watcher as watcher_mod
    from nova_ext.service import endpoint

    watcher = watcher_mod.Watcher.from_conf(conf)
    return endpoint.serving(conf, watcher, conf.nova_ext_metrics.watcher_port,
                            exporter.WatcherCollector(watcher))
