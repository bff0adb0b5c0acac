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
"""The whole cloud: built and started in order, or stopped."""

import json
import os
import time

from nova_ext_tools.cloud import bootstrap
from nova_ext_tools.cloud import infra
from nova_ext_tools.cloud import layout
from nova_ext_tools.cloud import nova
from nova_ext_tools.cloud import novaext
from nova_ext_tools.cloud import procs
from nova_ext_tools.cloud import services

#: Stopped first: what writes, before what it writes to.
STOP_ORDER = ('nova-ext-indexer', 'nova-ext-status-watcher', 'nova-api',
              'nova-api-stock', nova.SKEWED_API, nova.FLOOR_API,
              nova.PROFILED_API,
              'nova-scheduler')

#: Stopped last, after the services that use them: a service whose broker
#: or database went first retries it while it shuts down.
INFRA = ('mariadb', 'rabbitmq', nova.DB_PROXY, 'ovn-', 'ovs-', 'ovsdb-')


class Cloud(object):

    def __init__(self, state, faketime=None):
        self.lay = layout.Layout(state)
        os.makedirs(self.lay.state, exist_ok=True)
        self.ps = procs.Processes(self.lay.state)
        self.db = infra.MariaDB(self.lay, self.ps)
        self.mq = infra.RabbitMQ(self.lay, self.ps)
        self.ovn = infra.OVN(self.lay, self.ps)
        self.keystone = services.Keystone(self.lay, self.ps, self.db)
        self.placement = services.Placement(self.lay, self.ps, self.db)
        self.glance = services.Glance(self.lay, self.ps, self.db)
        self.neutron = services.Neutron(self.lay, self.ps, self.db,
                                        self.ovn)
        self.nova = nova.Nova(self.lay, self.ps, self.db, self.mq,
                              faketime=faketime)
        self.ext = novaext.NovaExt(self.lay, self.ps, self.db, self.nova)

    def _step(self, what, func, *args):
        started = time.monotonic()
        print('cloud: %s ...' % what, flush=True)
        result = func(*args)
        print('cloud: %s done (%.1f s)' % (what, time.monotonic() - started),
              flush=True)
        return result

    def build(self):
        """Everything from nothing: the state directory is made anew."""
        self.stop()
        infra.remove_state(self.lay)
        os.makedirs(self.lay.state)
        step = self._step
        step('MariaDB', self.db.start)
        step('RabbitMQ', self.mq.start)
        step('OVN', self.ovn.start)
        step('keystone', self.keystone.configure)
        step('keystone start', self.keystone.start)
        step('users, projects, catalog', bootstrap.identity, self.lay)
        bootstrap.clouds_yaml(self.lay)
        step('placement', self.placement.configure)
        step('glance', self.glance.configure)
        step('neutron', self.neutron.configure)
        self.placement.start()
        self.glance.start()
        step('neutron start', self.neutron.start)
        step('nova (stock)', self.nova.configure)
        # The install guide, from step 2: nothing of Nova runs yet, so
        # its "restart the Nova services" is their first start.
        step('nova_ext: attach', self.ext.attach)
        step('nova_ext: switch on', self.ext.switch_on)
        step('nova_ext: databases', self.ext.databases)
        step('nova start', self.nova.start)
        step('computes up', self.wait_for_computes)
        step('image, flavors, networks', self.resources)
        step('nova_ext: services', self.ext.start_services)
        step('nova_ext: verify', self.ext.verify)
        self.write_info()

    def built(self):
        """Whether a cloud was built in the state directory."""
        return os.path.exists(self.lay.path('cloud.json'))

    def resume(self):
        """The cloud built in the state directory, started with its data.

        Its databases, broker, OVN and configuration are as ``stop`` left
        them; each process starts as in :meth:`build`, without what made
        them.
        """
        with open(self.lay.path('cloud.json')) as f:
            ports = json.load(f)['ports']
        if ports != self.lay.ports:
            raise procs.CloudError(
                'the cloud in %s was built on other ports: start it with '
                'the NOVA_EXT_CLOUD_PORT_BASE it was built with'
                % self.lay.state)
        self.stop()
        step = self._step
        step('MariaDB', self.db.start, False)
        step('RabbitMQ', self.mq.start, False)
        step('OVN', self.ovn.start)
        step('keystone start', self.keystone.start)
        self.placement.start()
        self.glance.start()
        step('neutron start', self.neutron.start)
        step('database proxy', self.nova.start_db_proxy)
        step('nova start', self.nova.start)
        step('computes up', self.wait_for_computes)
        step('nova_ext: services', self.ext.start_services)
        step('nova_ext: verify', self.ext.verify)
        step("Neutron's exchange", self.neutron_notifies)
        self.write_info()

    def neutron_notifies(self):
        """Have Neutron notify once, which declares its exchange again.

        A broker started again has none of the exchanges its clients
        declared before. Neutron declares its own when it first notifies;
        until then nova_ext's Neutron feed cannot bind, and every detailed
        list asks Neutron (the admin guide's "Security groups from
        Neutron"). A busy cloud's Neutron notifies all the time; this
        one's only when something changes.
        """
        conn = bootstrap.connect(self.lay)
        try:
            public = conn.network.find_network('public')
            # Twice: a value the network already has sends no request.
            was = public.description
            conn.network.update_network(public, description=was + ' ')
            conn.network.update_network(public, description=was)
        finally:
            conn.close()

    def resources(self):
        info = bootstrap.resources(self.lay)
        with open(self.lay.path('resources.json'), 'w') as f:
            json.dump(info, f)

    def wait_for_computes(self):
        for cell in layout.CELLS:
            procs.wait_for(
                'OVN chassis of ' + cell,
                lambda c=cell: self.ovn.chassis_up(
                    self.lay.compute_host(c)), 60)
        conn = bootstrap.connect(self.lay)

        def up():
            services.run([services.venv_bin('nova-manage'), '--config-file',
                          self.nova.conf, 'cell_v2', 'discover_hosts'])
            hosts = {h.name for h in conn.compute.hypervisors()
                     if h.status == 'enabled' and h.state == 'up'}
            return len(hosts) == len(layout.CELLS)
        procs.wait_for('the computes', up, 180, interval=2)
        conn.close()

    def write_info(self):
        with open(self.lay.path('cloud.json'), 'w') as f:
            json.dump({'state': self.lay.state, 'ports': self.lay.ports,
                       'clouds_yaml': self.lay.path('clouds.yaml'),
                       'processes': self.ps.names()}, f, indent=1)

    def stop(self):
        """Every process: each group of them at once, in the order above."""
        names = self.ps.names()
        first = [n for n in STOP_ORDER if n in names]
        self.ps.stop_many(first)
        self.ps.stop_many([n for n in names
                           if n not in first and not n.startswith(INFRA)])
        self.mq.stop()
        self.ps.stop_all()

    def status(self):
        return {name: (self.ps.pid(name), self.ps.running(name))
                for name in self.ps.names()}
