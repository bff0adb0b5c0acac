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

compute_status_group = cfg.OptGroup(
    'nova_ext_compute_status',
    title='nova_ext compute status trait options',
    help="""
Options for the compute status trait callbacks: given a change in a compute
service's status, they decide which traits its root resource providers
carry in placement, so that request filters can keep unusable computes out
of allocation candidates.
""")

compute_status_opts = [
    cfg.ListOpt(
        'trait_callbacks',
        default=[],
        help="""
Trait callbacks to enable, by entry point name in the
``nova_ext.virt.trait_callbacks`` namespace.

An unknown or broken name stops the process that loads them at start with
an error that names it.
"""),
    cfg.IntOpt(
        'watch_interval',
        default=20,
        min=1,
        help="""
Seconds between two sweeps of ``nova-ext-status-watcher``.

Each sweep reads every nova-compute service of every cell, and makes the
owned traits of their root compute-node providers match: it is the
heartbeat watcher and the periodic reconcile at once. With Nova's ``db``
servicegroup driver the watcher judges a compute by its heartbeat counter
on its own clock, never by timestamps another host wrote: down once it
has seen the counter stand still for ``[DEFAULT]service_down_time``
seconds, up when the counter moved since a look less than that long ago.
So it sweeps at least every half ``service_down_time``; a longer interval
is shortened to that, with a warning at start.
"""),
    cfg.BoolOpt(
        'sync_on_service_update',
        default=True,
        help="""
With trait callbacks enabled and the ``nova_ext`` notification driver
attached, apply the callbacks when a process emits a ``service.update``
notification (an os-services enable, disable or force-down), instead of
waiting for the next watcher sweep.
"""),
]


def register_opts(conf):
    conf.register_group(compute_status_group)
    conf.register_opts(compute_status_opts, group=compute_status_group)


def list_opts():
    return {compute_status_group: compute_status_opts}
