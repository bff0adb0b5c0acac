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
"""nova-compute: link this host's records once it has started.

Nova has no startup hook for nova-compute that a package can configure.
nova_ext is loaded into every Nova process through its notification driver
(notifier.py), whose construction calls :func:`attach` early in the
process's life. With ``[nova_ext_object_migrations]run_at_startup`` set,
it starts one thread, which waits for the sign that the process is
nova-compute and has set itself up: ``nova.cmd.compute.main`` sets
``nova.db.main.api.DISABLE_DB_ACCESS`` and routes objects through
nova-conductor (``NovaObject.indirection_api``), right before it creates
the service (``internals/compute_service.py`` reads them). Any other
process never shows it, and the thread ends. The thread then runs the
enabled compute-id links for ``[DEFAULT]host`` through the conductor
(``nova_ext/compute_ids/host_links.py``), retrying while the conductor does
not answer. Only on the Nova versions in ``nova_ext.compat.TESTED_NOVA``:
on any other the thread logs why and ends.
"""

import threading
import time

from nova import context as nova_context
from oslo_log import log as logging

from nova_ext.compute_ids import host_links
from nova_ext import exception
from nova_ext.seams.internals import compute_service

LOG = logging.getLogger(__name__)

#: Seconds a process is watched for becoming nova-compute.
STARTUP_WAIT = 300.0
#: Seconds between two attempts to reach the conductor, and how many.
RETRY_INTERVAL, ATTEMPTS = 30.0, 10

_LOCK = threading.Lock()
_THREAD = None


def is_nova_compute():
    """Whether this process is a nova-compute that has set itself up.

    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    return compute_service.is_nova_compute()


def attach(conf):
    """Start the startup thread, once per process, if it is enabled."""
    global _THREAD
    if not conf.nova_ext_object_migrations.run_at_startup:
        return None
    with _LOCK:
        if _THREAD is None:
            _THREAD = threading.Thread(
                target=_when_started, args=(conf,), daemon=True,
                name='nova-ext-compute-ids-at-startup')
            _THREAD.start()
    return _THREAD


def _when_started(conf, wait=None, clock=time.monotonic, sleep=time.sleep):
    # STARTUP_WAIT is read when called, not when defined: tests shorten it.
    deadline = clock() + (STARTUP_WAIT if wait is None else wait)
    try:
        while not is_nova_compute():
            if clock() >= deadline:
                return
            sleep(1.0)
    except exception.UnsupportedNovaVersion as e:
        LOG.error('%s; run_at_startup of nova_ext compute-id links does '
                  'nothing', e)
        return
    ctx = nova_context.get_admin_context()
    for attempt in range(1, ATTEMPTS + 1):
        try:
            totals = run_for_host(ctx, conf, conf.host)
        except Exception as e:
            LOG.warning('nova_ext could not link the records of host %s '
                        '(attempt %d of %d): %s: %s', conf.host, attempt,
                        ATTEMPTS, type(e).__name__, e)
            sleep(RETRY_INTERVAL)
            continue
        LOG.info('nova_ext linked the records of host %s at startup: %s',
                 conf.host, totals)
        return
    LOG.warning('nova_ext gave up linking the records of host %s at '
                'startup; nova-ext-manage db online_data_migrations links '
                'them', conf.host)


def run_for_host(context, conf, host):
    """Run the enabled compute-id links for ``host`` until none is left.

    :returns: ``{name: [found, done]}`` over all batches.
    """
    names = [n for n in conf.nova_ext_object_migrations.migrations
             if n in host_links.LINKERS]
    batch = conf.nova_ext_object_migrations.startup_batch_size
    totals = {name: [0, 0] for name in names}
    while names:
        result = host_links.NovaExtComputeIdLinks.link_host(
            context, host, names, batch)
        for name, (found, done) in result.items():
            totals[name][0] += found
            totals[name][1] += done
        # A batch that linked nothing would find the same records again
        # (someone else linked them meanwhile, or they changed): stop.
        names = [name for name, (found, done) in result.items()
                 if found and done]
    return totals
