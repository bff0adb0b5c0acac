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

from oslo_config import cfg

metrics_group = cfg.OptGroup(
    'nova_ext_metrics',
    title='nova_ext metrics options',
    help="""
The HTTP endpoint of nova_ext's services (``nova-ext-indexer``,
``nova-ext-status-watcher``): ``/metrics`` in Prometheus's text format and
``/healthcheck`` for a load balancer or a monitoring check. Off unless a
port is set. See ``doc/source/admin/metrics.rst``.
""")

metrics_opts = [
    cfg.HostAddressOpt(
        'bind_host',
        default='127.0.0.1',
        help="""
Address the endpoint listens on. The endpoint has no authentication: keep
it on a management network.
"""),
    cfg.PortOpt(
        'indexer_port',
        default=0,
        help="""
Port of ``nova-ext-indexer``'s endpoint; 0 serves none. It exports the
index's metrics, including the list counters of every nova-api process.
"""),
    cfg.PortOpt(
        'watcher_port',
        default=0,
        help="""
Port of ``nova-ext-status-watcher``'s endpoint; 0 serves none.
"""),
    cfg.FloatOpt(
        'api_counters_interval',
        default=10.0,
        min=1.0,
        help="""
Seconds between two writes of a nova-api process's list counters to the
index database: each process writes them within this many seconds of a
list request, at most once in this many seconds, whether or not another
request follows. The indexer's endpoint exports them, and
``nova-ext-manage index status`` shows them. Read by nova-api at each
write.
"""),
]


def register_opts(conf):
    conf.register_group(metrics_group)
    conf.register_opts(metrics_opts, group=metrics_group)


def list_opts():
    return {metrics_group: metrics_opts}
