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
"""Nova in the superconductor layout, with nova_ext switched on.

nova.conf (nova-api, the super conductor, nova-scheduler) has the API
database and cell0; each cell has a conductor of its own with
``nova-<cell>.conf`` (its database and vhost, no API database) and a fake
compute with ``nova-compute-<cell>.conf``. Two nova-apis run under uwsgi:
nova_ext's (the ``nova_ext`` filter in its api-paste.ini) and a stock one
with Nova's api-paste.ini unchanged, on the same databases.
"""

import os
import re
import shutil
import sys

from nova_ext.api import paste_config

from nova_ext_tools.cloud import clock
from nova_ext_tools.cloud import layout
from nova_ext_tools.cloud import procs
from nova_ext_tools.cloud import services

#: The index's own database user: its grants can be taken away alone.
INDEX_USER = 'nova_ext_index'
#: A nova-api of one worker, with nova_ext, whose clock a test sets apart
#: (start_skewed_api): another host's.
SKEWED_API = 'nova-api-skewed'
#: A nova-api that answers lists from documents it is given
#: (nova_ext_tools.cloud.floor): the floor ``nova-ext-bench cloud`` measures.
FLOOR_API = 'nova-api-floor'
#: nova_ext's nova-api with a stack sampler first in its pipeline
#: (nova_ext_tools.cloud.sampler): ``nova-ext-bench cloud --profile``.
PROFILED_API = 'nova-api-profiled'
#: The cell whose database is reached through a forwarder a test can stop
#: (nova_ext_tools.cloud.tcpproxy): the cell's database server failing.
PROXIED_CELL = layout.CELLS[-1]
DB_PROXY = 'db-proxy-' + PROXIED_CELL
#: What runs each compute: Nova's nova-compute, with the cloud's driver
#: (``virt.FakeDriverKept``) in Nova's package as DRIVER_MODULE, whence
#: Nova loads DRIVER, the computes' ``compute_driver``. Nova logs that
#: name: it does not say nova_ext, whose seams a detached cloud's Nova
#: logs must not name (the switch-off test).
COMPUTE = 'nova_ext_tools.cloud.compute'
DRIVER_MODULE = 'nova.virt.cloud_kept_fake'
DRIVER = 'cloud_kept_fake.FakeDriverKept'


def compute_process(cell):
    """The name of the nova-compute process of ``cell``."""
    return 'nova-compute-' + cell


class Nova(object):

    def __init__(self, lay, ps, db, mq, faketime=None):
        self.lay, self.ps, self.db, self.mq = lay, ps, db, mq
        self.etc = lay.path('etc', 'nova')
        self.conf = os.path.join(self.etc, 'nova.conf')
        #: name of a process -> the clock offset it runs with ('-5s').
        self.faketime = faketime or {}

    def cell_conf(self, cell):
        return os.path.join(self.etc, 'nova-%s.conf' % cell)

    def compute_conf(self, cell):
        return os.path.join(self.etc, 'nova-compute-%s.conf' % cell)

    def confs(self):
        """Every nova.conf of the cloud: each Nova process reads one."""
        return ([self.conf] + [self.cell_conf(c) for c in layout.CELLS]
                + [self.compute_conf(c) for c in layout.CELLS])

    @property
    def paste(self):
        return os.path.join(self.etc, 'api-paste.ini')

    @property
    def stock_paste(self):
        return os.path.join(self.etc, 'api-paste-stock.ini')

    def cell_db_url(self, cell):
        port = (self.lay.ports['cell_db_proxy'] if cell == PROXIED_CELL
                else None)
        return self.lay.db_url('nova_' + cell, user='nova_' + cell,
                               port=port)

    def start_db_proxy(self):
        port = self.lay.ports['cell_db_proxy']
        self.ps.start(DB_PROXY, [
            sys.executable, '-m', 'nova_ext_tools.cloud.tcpproxy', str(port),
            str(self.lay.ports['mariadb'])])
        procs.wait_for(DB_PROXY, lambda: procs.port_open(port), 30, self.ps,
                       DB_PROXY)

    def stop_db_proxy(self):
        self.ps.stop(DB_PROXY)

    @property
    def index_url(self):
        return ('mysql+pymysql://%s:%s@%s:%d/nova_ext_index?charset=utf8'
                % (INDEX_USER, layout.PASSWORD, layout.HOST,
                   self.lay.ports['mariadb']))

    def _common(self, transport_vhost, host, state):
        lay = self.lay
        return {
            'DEFAULT': {
                'use_stderr': 'true',
                'host': host,
                'my_ip': layout.HOST,
                'state_path': state,
                'transport_url': lay.rabbit_url(transport_vhost),
            },
            'oslo_concurrency': {'lock_path': os.path.join(state, 'lock')},
            'oslo_messaging_notifications': {
                'transport_url': lay.rabbit_url('notifications')},
            'notifications': {'notification_format': 'both'},
            'keystone_authtoken': services.authtoken(lay, 'nova'),
            'placement': services.service_auth(lay, 'placement'),
            'neutron': services.service_auth(lay, 'neutron'),
            'service_user': dict(services.service_auth(lay, 'nova'),
                                 send_service_user_token='true'),
            'glance': {'region_name': layout.REGION},
            'conductor': {'workers': '1'},
            'scheduler': {'workers': '1'},
            'api': {'auth_strategy': 'keystone'},
        }

    def configure(self):
        """Nova's databases, cells and config files: a stock Nova."""
        lay = self.lay
        for name in ['nova_api', 'nova_cell0']:
            self.db.create_database(name)
        # Each cell's database has a user of its own, whose grants a test
        # can take away to take the cell down for every process at once.
        for cell in layout.CELLS:
            self.db.create_database('nova_' + cell, user='nova_' + cell)
        self.start_db_proxy()
        for vhost in ['nova', 'notifications', 'neutron'] + list(
                layout.CELLS):
            self.mq.add_vhost(vhost)
        os.makedirs(self.etc, exist_ok=True)
        shutil.copy(os.path.join(sys.prefix, 'etc', 'nova',
                                 'api-paste.ini'), self.paste)
        shutil.copy(self.paste, self.stock_paste)
        top = self._common('nova', 'controller', lay.path('nova'))
        top['api_database'] = {'connection': lay.db_url('nova_api')}
        top['database'] = {'connection': lay.db_url('nova_cell0')}
        top['scheduler']['discover_hosts_in_cells_interval'] = '2'
        # The tests, not Nova's default quota, bound how many servers.
        top['quota'] = {'instances': '-1', 'cores': '-1', 'ram': '-1'}
        services.write_ini(self.conf, top)
        # Both nova-apis stand for one public endpoint, nova_ext's: the
        # links in the stock one's answers name it too.
        services.write_ini(os.path.join(self.etc, 'nova-api-stock.conf'), {
            'api': {'compute_link_prefix': lay.url('nova')}})
        for cell in layout.CELLS:
            conf = self._common(cell, 'conductor-' + cell,
                                lay.path('nova-' + cell))
            conf['database'] = {'connection': self.cell_db_url(cell)}
            services.write_ini(self.cell_conf(cell), conf)
            host = lay.compute_host(cell)
            conf = self._common(cell, host, lay.path(host))
            # Nova's fake driver that keeps its node's identity in
            # <state_path>/compute_id, as a real driver does (FakeDriver
            # makes a new one at each start, and Nova then refuses to
            # start a compute that has started before), and here its
            # servers too.
            conf['DEFAULT']['compute_driver'] = DRIVER
            os.makedirs(lay.path(host), exist_ok=True)
            services.write_ini(self.compute_conf(cell), conf)
        manage = [services.venv_bin('nova-manage'), '--config-file',
                  self.conf]
        services.run(manage + ['api_db', 'sync'])
        services.run(manage + ['cell_v2', 'map_cell0', '--database_connection',
                               lay.db_url('nova_cell0')])
        services.run(manage + ['db', 'sync'])
        for cell in layout.CELLS:
            services.run(manage + [
                'cell_v2', 'create_cell', '--name', cell,
                '--database_connection', self.cell_db_url(cell),
                '--transport-url', lay.rabbit_url(cell)])
            services.run([services.venv_bin('nova-manage'), '--config-file',
                          self.cell_conf(cell), 'db', 'sync',
                          '--local_cell'])

    # Processes: name -> (argv, environment) so a test can restart one.

    def _api(self, name, files, port, processes=layout.API_WORKERS):
        services.uwsgi(
            self.ps, name, 'nova.wsgi.osapi_compute:application', port,
            dict(self._clock(name), OS_NOVA_CONFIG_DIR=self.etc,
                 OS_NOVA_CONFIG_FILES=';'.join(files)),
            processes=processes)

    def _clock(self, name):
        """The environment that sets the clock of process ``name``.

        libfaketime is preloaded into the process itself rather than run
        through the ``faketime`` command, which runs the program in a
        child of its own session: stopping its process group would leave
        the program running.
        """
        offset = self.faketime.get(name)
        if not offset:
            return {}
        return clock.environ(offset)

    def _services(self):
        """{name: (binary, config file)} of each Nova service but the APIs.

        In the order they start.
        """
        services_ = {'nova-conductor': ('nova-conductor', self.conf)}
        for cell in layout.CELLS:
            services_['nova-conductor-' + cell] = ('nova-conductor',
                                                   self.cell_conf(cell))
        services_['nova-scheduler'] = ('nova-scheduler', self.conf)
        for cell in layout.CELLS:
            services_[compute_process(cell)] = ('nova-compute',
                                                self.compute_conf(cell))
        return services_

    def _apis(self):
        """{name: (config files, port key)} of the two nova-apis.

        Nova's WSGI application loads its pipeline from the first file.
        """
        return {
            'nova-api': ([os.path.basename(self.paste), 'nova.conf'],
                         'nova'),
            'nova-api-stock': ([os.path.basename(self.stock_paste),
                                'nova.conf', 'nova-api-stock.conf'],
                               'nova_stock'),
        }

    def _start(self, name):
        if name in self._apis():
            files, port = self._apis()[name]
            self._api(name, files, self.lay.ports[port])
            return
        binary, conf = self._services()[name]
        argv = ([services.venv_bin('python'), '-m', COMPUTE]
                if binary == 'nova-compute' else [services.venv_bin(binary)])
        self.ps.start(name, argv + ['--config-file', conf],
                      env=dict(os.environ, **self._clock(name)))

    def start(self):
        for name in self._services():
            self._start(name)
        self.start_apis()

    def start_apis(self):
        for name in self._apis():
            self._start(name)
        for name, (_, port) in self._apis().items():
            procs.wait_for(name, lambda p=port: procs.http_up(
                self.lay.url(p)), 180, self.ps, name)

    def restart(self, name):
        """Stop and start one Nova process (a nova-api: all its workers)."""
        self.ps.stop(name)
        self._start(name)

    def set_clock(self, name, offset):
        """Restart a Nova service with its clock ``offset`` ('-5s') off.

        None: the machine's clock again.
        """
        if offset:
            self.faketime[name] = offset
        else:
            self.faketime.pop(name, None)
        self.restart(name)

    def start_skewed_api(self, offset):
        """Start SKEWED_API, nova_ext's nova-api on a clock ``offset`` off.

        Stop it with ``ps.stop(SKEWED_API)``.
        """
        self.faketime[SKEWED_API] = offset
        self._api(SKEWED_API, self._apis()['nova-api'][0],
                  self.lay.ports['nova_skewed'], processes=1)
        procs.wait_for(SKEWED_API, lambda: procs.http_up(
            self.lay.url('nova_skewed')), 180, self.ps, SKEWED_API)

    def start_floor_api(self, documents):
        """Start FLOOR_API, answering from the documents in ``documents``.

        Nova's api-paste.ini with the floor's filter where nova_ext's goes,
        as many workers as nova-api. Stop it with ``ps.stop(FLOOR_API)``.
        """
        with open(self.stock_paste) as f:
            text = paste_config.enable(f.read())
        text = text.replace(paste_config.FACTORY, (
            'paste.filter_factory = nova_ext_tools.cloud.floor:'
            'filter_factory\ndocuments = %s' % documents))
        self._extra_api(FLOOR_API, text, 'nova_floor')

    def start_profiled_api(self, output):
        """Start PROFILED_API: nova_ext's nova-api, its requests sampled.

        Its stacks go to ``output``. Stop it with ``ps.stop(PROFILED_API)``.
        """
        with open(self.paste) as f:
            text = f.read()
        text = re.sub(r'(?m)^(keystone\s*=\s*)', r'\1sampler ', text)
        text += ('\n[filter:sampler]\npaste.filter_factory = '
                 'nova_ext_tools.cloud.sampler:filter_factory\n'
                 'output = %s\n' % output)
        self._extra_api(PROFILED_API, text, 'nova_profiled')

    def _extra_api(self, name, paste_text, port):
        """Start a nova-api of nova.conf with its own api-paste.ini."""
        paste = os.path.join(self.etc, 'api-paste-%s.ini' % name)
        with open(paste, 'w') as f:
            f.write(paste_text)
        self._api(name, [os.path.basename(paste), 'nova.conf'],
                  self.lay.ports[port])
        procs.wait_for(name, lambda: procs.http_up(self.lay.url(port)), 180,
                       self.ps, name)

    def restart_all(self):
        """Restart every Nova process, as after a change of nova.conf."""
        self.ps.stop_many(self.process_names())
        self.start()

    def process_names(self):
        return list(self._services()) + list(self._apis())
