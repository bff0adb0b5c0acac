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
"""nova_ext switched on in the cloud by the install guide's own commands.

doc/source/install/index.rst, "From a stock Nova to every capability",
step by step: each step is the command an operator types, run here as a
process of its own, its exit code and output kept for the deployment
tests.
"""

import subprocess
import urllib.request

from prometheus_client import parser

from nova_ext_tools.cloud import procs
from nova_ext_tools.cloud import services

#: [nova_ext_instance_list]neutron_feed_call_timeout: no Neutron request
#: of this cloud takes longer, and its tests need not wait 300 s for a
#: worker's feed to prove anything.
FEED_CALL_TIMEOUT = 10
#: [nova_ext_metrics]api_counters_interval: tests and benchmarks wait for
#: the counters of their last requests, which nova-api's workers publish
#: within this many seconds.
COUNTERS_INTERVAL = 2
#: Seconds after which every nova-api worker has published the counters
#: of its last request.
PUBLISH_SECONDS = COUNTERS_INTERVAL + 1

#: [nova_ext_object_migrations]migrations, every one nova_ext has.
MIGRATIONS = ('instance-compute-id,migration-dest-compute-id,'
              'compute-node-service-id,build-capture-purge')


class NovaExt(object):

    def __init__(self, lay, ps, db, nova):
        self.lay, self.ps, self.db, self.nova = lay, ps, db, nova

    def command(self, name, *args, conf=None, check=True):
        argv = [services.venv_bin(name), '--config-file',
                conf or self.nova.conf] + list(args)
        done = subprocess.run(argv, capture_output=True, text=True)
        if check and done.returncode:
            raise procs.CloudError('%s exited %d:\n%s%s' % (
                ' '.join(argv[:1] + argv[3:]), done.returncode,
                done.stdout[-3000:], done.stderr[-3000:]))
        return done

    def attach(self):
        """Step 2: the seams."""
        services.run([services.venv_bin('python'), '-m',
                      'nova_ext.api.paste_config', self.nova.paste])
        for conf in self.nova.confs():
            services.write_ini(conf, {'oslo_messaging_notifications': {
                'driver': ['messagingv2', 'nova_ext']}})
        services.write_ini(self.nova.conf, {'filter_scheduler': {
            'available_filters': ['nova.scheduler.filters.all_filters',
                                  'nova_ext.seams.scheduler.attach']}})

    def switch_on(self):
        """Step 4: every capability, capture in every process that writes."""
        index = {'connection': self.nova.index_url, 'capture': 'true'}
        for conf in self.nova.confs():
            services.write_ini(conf, {
                'nova_ext_instance_list': {
                    'driver': 'index', 'fast_render': 'true',
                    'render_cache_size': '5000', 'page_cache_size': '16',
                    'detail_body_cache_size': '8',
                    'gc_freeze': 'true',
                    'neutron_feed_url': self.lay.rabbit_url('neutron'),
                    'neutron_feed_call_timeout': str(FEED_CALL_TIMEOUT)},
                'nova_ext_index': index,
                'nova_ext_notifications': {'consumers': 'index'},
                'notifications': {
                    'notify_on_state_change': 'vm_and_task_state'},
                'nova_ext_compute_status': {
                    'trait_callbacks': 'compute-status'},
                'nova_ext_object_migrations': {
                    'migrations': MIGRATIONS, 'run_at_startup': 'true'},
                'nova_ext_cell0_rebuild': {'enabled': 'true'},
                'nova_ext_metrics': {
                    'indexer_port': str(self.lay.ports['metrics']),
                    'api_counters_interval': str(COUNTERS_INTERVAL)},
            })
        services.write_ini(self.nova.conf, {'nova_ext_scheduler': {
            'request_filters': 'compute-disabled,compute-down'}})

    def switch_off(self):
        """The guide's "Switching nova_ext off", step 1: defaults again."""
        for conf in self.nova.confs():
            services.write_ini(conf, {
                'nova_ext_instance_list': {'driver': 'cells',
                                           'fast_render': 'false'},
                'nova_ext_index': {'capture': 'false'},
                'nova_ext_scheduler': {'request_filters': ''},
                'nova_ext_compute_status': {'trait_callbacks': ''},
                'nova_ext_cell0_rebuild': {'enabled': 'false'},
                'nova_ext_notifications': {'consumers': ''},
                'nova_ext_object_migrations': {'run_at_startup': 'false'},
            })

    def detach(self):
        """Step 3: the seams out; api-paste.ini as it was given."""
        services.run([services.venv_bin('python'), '-m',
                      'nova_ext.api.paste_config', '--remove',
                      self.nova.paste])
        for conf in self.nova.confs():
            services.write_ini(conf, {'oslo_messaging_notifications': {
                'driver': 'messagingv2'}})
        services.write_ini(self.nova.conf, {'filter_scheduler': {
            'available_filters': 'nova.scheduler.filters.all_filters'}})

    def databases(self):
        """Step 3: nova_ext's tables and the index (its own database user)."""
        self.db.create_database('nova_ext_index', user='nova_ext_index')
        self.command('nova-ext-manage', 'api_db', 'sync')
        self.command('nova-ext-manage', 'index', 'db_sync')
        self.command('nova-ext-manage', 'index', 'sync')

    def start_services(self):
        """Step 5: nova_ext's own services."""
        for name in ('nova-ext-indexer', 'nova-ext-status-watcher'):
            self.start_service(name)

    def start_service(self, name):
        self.ps.start(name, [services.venv_bin(name), '--config-file',
                             self.nova.conf])

    def verify(self):
        """Steps 6 and 7."""
        self.command('nova-ext-manage', 'db', 'online_data_migrations')
        self.command('nova-ext-status', 'upgrade', 'check')
        self.command('nova-ext-manage', 'index', 'status')
        self.command('nova-ext-manage', 'index', 'verify')

    def list_counters(self):
        """{outcome: total} of every nova-api process, from /metrics."""
        return list_counters(self.metrics())

    def handed_reasons(self):
        """{'outcome: reason': total} of every nova-api process."""
        return handed_reasons(self.metrics())

    def page_lookups(self):
        """{outcome: total} of every nova-api process's page cache."""
        return page_lookups(self.metrics())

    def metrics(self):
        with urllib.request.urlopen(self.lay.url('metrics', '/metrics'),
                                    timeout=10) as r:
            return r.read().decode()


def _totals(text, name, key):
    """{key(labels): total} of the samples ``name`` in /metrics text."""
    totals = {}
    for family in parser.text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                k = key(sample.labels)
                totals[k] = totals.get(k, 0) + sample.value
    return totals


#: The outcomes that count each list request reaching nova-api's selector
#: once (``rendered``, ``handed``, ``groups_kept``, ... count within them).
ATTEMPTS = ('served', 'latched', 'unservable', 'unavailable', 'failed')


def list_counters(text):
    """{outcome: total} of every nova-api process, from /metrics text."""
    return _totals(text, 'nova_ext_index_api_list_requests_total',
                   lambda labels: labels['outcome'])


def handed_reasons(text):
    """{'outcome: reason': total} of every nova-api process, from /metrics."""
    return _totals(text, 'nova_ext_index_api_list_handed_total',
                   lambda labels: '%s: %s' % (labels['outcome'],
                                              labels['reason']))


def page_lookups(text):
    """{outcome: total} of the page caches' lookups, from /metrics text."""
    return _totals(text, 'nova_ext_index_api_page_cache_lookups_total',
                   lambda labels: labels['outcome'])
