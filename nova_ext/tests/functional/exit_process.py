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
"""A Nova process that writes once and exits, for test_capture_exit.

Run as ``python -m nova_ext.tests.functional.exit_process --config-file
nova.conf``, it starts as Nova's commands do (``nova.config.parse_args``,
so that capture attaches through the notification driver), creates the
cell database's schema, creates one instance (which makes it a holder of
the index's marks, ``nova_ext.index.marks.holders``) and prints ``ready``.
On a line on its standard input, it creates another instance, prints
``written`` and returns from ``main``, as ``nova-manage`` does after its
writes: whatever nova_ext does next, it does at the interpreter's exit.
Instances are created through ``nova.db.main.api``.

With ``NOVA_EXT_TEST_EXIT=service`` in its environment it serves instead,
after its writes, as nova-conductor does, with Nova's base manager: Nova's
``Service`` under oslo.service (on native threads, its threading backend's
launcher, which leaves by ``os._exit`` once SIGTERM has stopped the
service), and prints ``serving`` once it has started.

With ``NOVA_EXT_TEST_EXIT=worker`` both instances are created by the
service instead, in the worker oslo.service forks for it (cotyledon's, as
nova-conductor runs), once the worker's ``wait()`` has begun: as
nova-conductor's first write comes with its first request, nothing of
nova_ext's index runs in the process before. Its manager runs a periodic
task every second and takes 3 s to shut down gracefully: Nova skips its
periodic tasks then, oslo.service's timer raises for it, and the worker's
``wait()`` raises during the stop.
"""

import os
import sys
import threading
import time

from nova.conductor import rpcapi as conductor_rpcapi
from nova import config
from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova.db import migration
from nova import manager
from nova import objects
from nova import service as nova_service
from oslo_log import log as logging
from oslo_service import periodic_task

from nova_ext.index.marks import process

FIRST = '0e0e0e0e-0000-4000-8000-000000000000'
UUID = '0e0e0e0e-0000-4000-8000-000000000001'


def create(uuid):
    main_db_api.instance_create(nova_context.get_admin_context(), {
        'uuid': uuid, 'project_id': 'p', 'user_id': 'u'})


def write_both(go):
    """The first instance, recorded; the second once ``go`` says so."""
    create(FIRST)
    process.get_batcher(config.CONF).flush(10)
    print('ready', flush=True)
    go.readline()
    create(UUID)
    print('written', flush=True)


def main(argv):
    config.parse_args(argv)
    logging.setup(config.CONF, 'nova')
    migration.db_sync(database='main')
    mode = os.environ.get('NOVA_EXT_TEST_EXIT')
    if mode != 'worker':
        write_both(sys.stdin)
    if mode in ('service', 'worker'):
        # Nova's base manager: the conductor's own asks keystone for
        # placement's endpoint as it is made.
        objects.register_all()
        if mode == 'service':
            nova_service.serve(Conductor(
                'exit-process', 'nova-conductor', conductor_rpcapi.RPC_TOPIC,
                'nova.manager.Manager'), workers=1, no_fork=True)
        else:
            # Periodic tasks on, as Service.create has them by default.
            nova_service.serve(Conductor(
                'exit-process', 'nova-conductor', conductor_rpcapi.RPC_TOPIC,
                __spec__.name + '.SlowToStop', periodic_enable=True),
                workers=1)
        nova_service.wait()


class Conductor(nova_service.Service):
    """Nova's service, which says when it serves."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.waiting = threading.Event()
        # The worker's own standard input is /dev/null (multiprocessing).
        self.go = os.fdopen(os.dup(sys.stdin.fileno()))

    def start(self):
        super().start()
        if os.environ.get('NOVA_EXT_TEST_EXIT') == 'worker':
            threading.Thread(target=self._write, daemon=True).start()
        else:
            print('serving', flush=True)

    def _write(self):
        self.waiting.wait()
        # wait() has looked up what it runs by now.
        time.sleep(0.5)
        write_both(self.go)
        print('serving', flush=True)

    def wait(self):
        self.waiting.set()
        return super().wait()


class SlowToStop(manager.Manager):
    """Nova's base manager, with a periodic task and a slow shutdown."""

    @periodic_task.periodic_task(spacing=1, run_immediately=True)
    def _tick(self, context):
        pass

    def graceful_shutdown(self, timeout):
        # Long enough for Nova's periodic timer to run during it.
        time.sleep(3)


if __name__ == '__main__':
    main(sys.argv)
