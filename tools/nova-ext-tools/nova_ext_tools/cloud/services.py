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
"""keystone, placement, glance and neutron, each its own processes.

The APIs run under uwsgi (as DevStack runs them), configured from files
the cloud writes under ``<state>/etc``.
"""

import os
import shutil
import subprocess
import sys

from nova_ext_tools.cloud import layout
from nova_ext_tools.cloud import procs


def venv_bin(name):
    return os.path.join(os.path.dirname(sys.executable), name)


def _read_ini(path):
    """[(section, [(option, value)])] of an ini file, repeated keys kept."""
    sections = [('DEFAULT', [])]
    with open(path) as f:
        for line in f:
            text = line.strip()
            if not text or text[0] in '#;':
                continue
            if text.startswith('[') and text.endswith(']'):
                sections.append((text[1:-1], []))
            elif '=' in text:
                option, _, value = text.partition('=')
                sections[-1][1].append((option.strip(), value.strip()))
    return sections


def write_ini(path, sections, base=None):
    """Write ``sections`` ({section: {option: value}}) into ``path``.

    A list value is written as the option repeated, one line each (oslo
    .config's MultiStrOpt). Options already in ``path`` (or in ``base``,
    copied first) are kept unless ``sections`` sets them.
    """
    if base and not os.path.exists(path):
        shutil.copy(base, path)
    current = _read_ini(path) if os.path.exists(path) else [('DEFAULT', [])]
    for section, options in sections.items():
        entries = next((e for name, e in current if name == section), None)
        if entries is None:
            entries = []
            current.append((section, entries))
        for option, value in options.items():
            values = value if isinstance(value, list) else [value]
            kept = [(o, v) for o, v in entries if o != option]
            entries[:] = kept + [(option, str(v)) for v in values]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        for name, entries in current:
            if name != 'DEFAULT' and not entries:
                continue
            f.write('[%s]\n' % name)
            for option, value in entries:
                f.write('%s = %s\n' % (option, value))
            f.write('\n')


def run(argv, env=None, what=None):
    """Run a command of the cloud's to completion; fail with its output."""
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    if done.returncode:
        raise procs.CloudError('%s failed (%d):\n%s%s' % (
            what or ' '.join(argv), done.returncode, done.stdout[-2000:],
            done.stderr[-4000:]))
    return done.stdout


#: Seconds uwsgi's master gives a worker to end once told to: above
#: [nova_ext_index]max_lag (30 s), which a nova-api worker may wait at its
#: exit for the index to take its changes.
WORKER_RELOAD_MERCY = 60


def uwsgi(ps, name, module, port, env, processes=1, threads=1):
    """Start ``module``'s WSGI application under uwsgi on ``port``.

    Configured as DevStack and the OpenStack install guides run an API:
    SIGTERM to the master ends each worker gracefully (its request
    finished, then the interpreter's exit hooks), within
    ``worker-reload-mercy``; stopped by a SIGTERM to the master alone, as
    systemd stops DevStack's units. A worker that gets a second signal
    while it exits leaves without its exit hooks.
    """
    argv = [venv_bin('uwsgi'), '--master', '--die-on-term',
            '--hook-master-start', 'unix_signal:15 gracefully_kill_them_all',
            '--need-app', '--lazy-apps', '--enable-threads',
            '--home', sys.prefix,
            # No keep-alive: a connection held open would hold its worker.
            '--http-socket', '127.0.0.1:%d' % port,
            '--add-header', 'Connection: close',
            '--module', module, '--processes', str(processes),
            '--threads', str(threads), '--buffer-size', '65535',
            '--worker-reload-mercy', str(WORKER_RELOAD_MERCY),
            '--procname-prefix', name + ' ']
    ps.start(name, argv, env=dict(os.environ, **env), leader_stop=True)


def service_auth(lay, user='nova'):
    """A ``[section]`` that keystoneauth loads: a service user's."""
    return {
        'auth_url': lay.url('keystone'),
        'auth_type': 'password',
        'username': user,
        'password': layout.PASSWORD,
        'project_name': 'service',
        'user_domain_name': 'Default',
        'project_domain_name': 'Default',
        'region_name': layout.REGION,
    }


def authtoken(lay, user):
    """``[keystone_authtoken]`` of a service whose user is ``user``."""
    conf = service_auth(lay, user)
    del conf['region_name']
    conf.update(www_authenticate_uri=lay.url('keystone'),
                service_token_roles_required='true')
    return conf


class _API(object):
    """An OpenStack API under uwsgi, its config files in ``etc/<name>``."""

    #: The process's name and port key, and its WSGI application.
    NAME = MODULE = None
    PROCESSES, THREADS = 2, 1

    def __init__(self, lay, ps, db):
        self.lay, self.ps, self.db = lay, ps, db
        self.etc = lay.path('etc', self.NAME)

    def env(self):
        """The environment that tells the application its config files."""
        raise NotImplementedError()

    @property
    def url(self):
        return self.lay.url(self.NAME)

    def start(self):
        uwsgi(self.ps, self.NAME, self.MODULE, self.lay.ports[self.NAME],
              self.env(), processes=self.PROCESSES, threads=self.THREADS)
        procs.wait_for(self.NAME, lambda: procs.http_up(self.url), 180,
                       self.ps, self.NAME)


class Keystone(_API):

    NAME, MODULE = 'keystone', 'keystone.wsgi.api:application'

    def __init__(self, lay, ps, db):
        super().__init__(lay, ps, db)
        self.conf = os.path.join(self.etc, 'keystone.conf')

    @property
    def url(self):
        return self.lay.keystone

    def env(self):
        return {'OS_KEYSTONE_CONFIG_FILES': self.conf}

    def configure(self):
        self.db.create_database('keystone')
        keys = self.lay.path('keystone')
        write_ini(self.conf, {
            'DEFAULT': {'use_stderr': 'true'},
            'database': {'connection': self.lay.db_url('keystone')},
            'token': {'provider': 'fernet'},
            'fernet_tokens': {'key_repository': keys + '/fernet-keys'},
            'fernet_receipts': {'key_repository': keys + '/fernet-keys'},
            'credential': {'key_repository': keys + '/credential-keys'},
        })
        manage = [venv_bin('keystone-manage'), '--config-file', self.conf]
        for d in ('fernet-keys', 'credential-keys'):
            os.makedirs(os.path.join(keys, d), exist_ok=True)
        run(manage + ['db_sync'])
        run(manage + ['fernet_setup', '--keystone-user', 'root',
                      '--keystone-group', 'root'])
        run(manage + ['credential_setup', '--keystone-user', 'root',
                      '--keystone-group', 'root'])
        run(manage + [
            'bootstrap', '--bootstrap-password', layout.PASSWORD,
            '--bootstrap-region-id', layout.REGION,
            '--bootstrap-admin-url', self.lay.keystone,
            '--bootstrap-internal-url', self.lay.keystone,
            '--bootstrap-public-url', self.lay.keystone])


class Placement(_API):

    NAME, MODULE = 'placement', 'placement.wsgi.api:application'

    def env(self):
        return {'OS_PLACEMENT_CONFIG_DIR': self.etc}

    def configure(self):
        self.db.create_database('placement')
        conf = os.path.join(self.etc, 'placement.conf')
        write_ini(conf, {
            'DEFAULT': {'use_stderr': 'true'},
            'placement_database': {
                'connection': self.lay.db_url('placement')},
            'api': {'auth_strategy': 'keystone'},
            'keystone_authtoken': authtoken(self.lay, 'placement'),
        })
        run([venv_bin('placement-manage'), '--config-file', conf,
             'db', 'sync'])


class Glance(_API):

    NAME, MODULE = 'glance', 'glance.wsgi.api:application'
    PROCESSES, THREADS = 1, 4

    def env(self):
        return {'OS_GLANCE_CONFIG_DIR': self.etc}

    def configure(self):
        self.db.create_database('glance')
        os.makedirs(self.etc, exist_ok=True)
        shutil.copy(os.path.join(sys.prefix, 'etc', 'glance',
                                 'glance-api-paste.ini'), self.etc)
        conf = os.path.join(self.etc, 'glance-api.conf')
        write_ini(conf, {
            'DEFAULT': {'use_stderr': 'true',
                        'enabled_backends': 'file:file',
                        'public_endpoint': self.lay.url('glance'),
                        'worker_self_reference_url': self.lay.url('glance')},
            'database': {'connection': self.lay.db_url('glance')},
            'glance_store': {'default_backend': 'file'},
            'file': {'filesystem_store_datadir':
                     self.lay.path('glance', 'images')},
            'os_glance_staging_store': {
                'filesystem_store_datadir': self.lay.path('glance',
                                                          'staging')},
            'os_glance_tasks_store': {
                'filesystem_store_datadir': self.lay.path('glance',
                                                          'tasks')},
            'keystone_authtoken': authtoken(self.lay, 'glance'),
            'paste_deploy': {'flavor': 'keystone'},
        })
        run([venv_bin('glance-manage'), '--config-file', conf, 'db_sync'])


class Neutron(_API):
    """neutron-api under uwsgi with ML2/OVN, and OVN's maintenance worker.

    OVN binds a port to a compute host when that host's ovn-controller
    has registered its chassis (infra.OVN), with no neutron agent: the
    mechanism driver DevStack deploys by default.
    """

    NAME, MODULE = 'neutron', 'neutron.wsgi.api:application'

    def __init__(self, lay, ps, db, ovn):
        super().__init__(lay, ps, db)
        self.ovn = ovn
        self.files = [os.path.join(self.etc, 'neutron.conf'),
                      os.path.join(self.etc, 'ml2_conf.ini')]

    def configure(self):
        self.db.create_database('neutron')
        os.makedirs(self.etc, exist_ok=True)
        shutil.copy(os.path.join(sys.prefix, 'etc', 'neutron',
                                 'api-paste.ini'), self.etc)
        write_ini(self.files[0], {
            'DEFAULT': {
                'use_stderr': 'true',
                'core_plugin': 'ml2',
                'service_plugins': 'ovn-router',
                'auth_strategy': 'keystone',
                'api_paste_config': os.path.join(self.etc, 'api-paste.ini'),
                'transport_url': self.lay.rabbit_url('neutron'),
                'notify_nova_on_port_status_changes': 'true',
                'notify_nova_on_port_data_changes': 'true',
                'state_path': self.lay.path('neutron'),
                'dhcp_agent_notification': 'false',
            },
            'database': {'connection': self.lay.db_url('neutron')},
            # Its changes' notifications: nova_ext's nova-api reads them.
            'oslo_messaging_notifications': {'driver': 'messagingv2'},
            'keystone_authtoken': authtoken(self.lay, 'neutron'),
            'nova': service_auth(self.lay, 'nova'),
            'oslo_concurrency': {'lock_path': self.lay.path('neutron',
                                                            'lock')},
            'quotas': {'quota_port': '-1', 'quota_floatingip': '-1',
                       'quota_security_group': '-1',
                       'quota_security_group_rule': '-1'},
        })
        write_ini(self.files[1], {
            'ml2': {'mechanism_drivers': 'ovn',
                    'type_drivers': 'local,flat,vlan,geneve',
                    'tenant_network_types': 'geneve',
                    'extension_drivers': 'port_security',
                    'overlay_ip_version': '4'},
            'ml2_type_geneve': {'vni_ranges': '1:65536',
                                'max_header_size': '38'},
            'ml2_type_flat': {'flat_networks': 'public'},
            'securitygroup': {'enable_security_group': 'true'},
            'ovn': {'ovn_nb_connection': self.ovn.nb,
                    'ovn_sb_connection': self.ovn.sb,
                    'ovn_metadata_enabled': 'false',
                    'enable_distributed_floating_ip': 'false'},
        })
        run([venv_bin('neutron-db-manage')] + self._config_args()
            + ['upgrade', 'heads'])

    def _config_args(self):
        args = []
        for f in self.files:
            args += ['--config-file', f]
        return args

    def env(self):
        return {'OS_NEUTRON_CONFIG_DIR': self.etc,
                'OS_NEUTRON_CONFIG_FILES': ';'.join(
                    os.path.basename(f) for f in self.files)}

    def start(self):
        self.ps.start('neutron-ovn-maintenance', [
            venv_bin('neutron-ovn-maintenance-worker')]
            + self._config_args())
        super().start()
