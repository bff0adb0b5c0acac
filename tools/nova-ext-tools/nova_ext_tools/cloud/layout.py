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
"""Where each part of the cloud lives: ports, names, credentials.

Everything listens on 127.0.0.1 only. The ports sit in one block from
``base`` (``NOVA_EXT_CLOUD_PORT_BASE``, 20000 by default) so that a second
cloud, or another program, can be kept clear of them.
"""

import os

HOST = '127.0.0.1'
REGION = 'RegionOne'
PASSWORD = 'nova-ext-cloud'
#: The cells, each with its own database, vhost, conductor and compute.
CELLS = ('cell1', 'cell2')
#: The users a test acts as: name -> (project, role).
USERS = {
    'admin': ('admin', 'admin'),
    'member1': ('project1', 'member'),
    'reader1': ('project1', 'reader'),
    'member2': ('project2', 'member'),
    'reader2': ('project2', 'reader'),
}
#: nova-api's uwsgi workers (nova_ext's; the stock one has as many).
API_WORKERS = 4

_OFFSETS = {
    'mariadb': 3306,
    # The way to the last cell's database (nova_ext_tools.cloud.tcpproxy).
    'cell_db_proxy': 3307,
    'rabbit': 5672,
    'rabbit_dist': 5673,
    # The broker's own Erlang port mapper, not the host's shared one.
    'epmd': 4369,
    'ovn_nb': 6641,
    'ovn_sb': 6642,
    'keystone': 5000,
    'placement': 8778,
    'glance': 9292,
    'neutron': 9696,
    'nova': 8774,
    'nova_stock': 8775,
    'nova_skewed': 8776,
    'nova_floor': 8777,
    'nova_profiled': 8779,
    'metrics': 9101,
}


class Layout(object):

    def __init__(self, state, base=None):
        self.state = os.path.abspath(state)
        if base is None:
            base = int(os.environ.get('NOVA_EXT_CLOUD_PORT_BASE', 20000))
        self.base = base
        self.ports = {k: base + v for k, v in _OFFSETS.items()}

    def path(self, *parts):
        return os.path.join(self.state, *parts)

    def url(self, service, path=''):
        return 'http://%s:%d%s' % (HOST, self.ports[service], path)

    def db_url(self, name, user='root', port=None):
        return ('mysql+pymysql://%s:%s@%s:%d/%s?charset=utf8'
                % (user, PASSWORD, HOST, port or self.ports['mariadb'],
                   name))

    def rabbit_url(self, vhost):
        return 'rabbit://nova:%s@%s:%d/%s' % (
            PASSWORD, HOST, self.ports['rabbit'], vhost)

    def compute_host(self, cell):
        return 'compute-' + cell

    @property
    def keystone(self):
        return self.url('keystone', '/v3')
