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

object_migrations_group = cfg.OptGroup(
    'nova_ext_object_migrations',
    title='nova_ext online data migration options',
    help="""
Options for nova_ext's online data migrations, which follow the contract
of ``nova-manage db online_data_migrations``: each takes a context and a
batch size and returns how many records it found and how many it fixed.
""")

object_migrations_opts = [
    cfg.ListOpt(
        'migrations',
        default=[],
        help="""
Online data migrations to enable, by entry point name in the
``nova_ext.object_migrations`` namespace, run in the order given.
"""),
    cfg.BoolOpt(
        'run_at_startup',
        default=False,
        help="""
Set in nova-compute's configuration: once nova-compute has started, run the
compute-id links enabled in ``migrations`` (``instance-compute-id``,
``migration-dest-compute-id``, ``compute-node-service-id``) for this
host's records (``[DEFAULT]host``), batch after batch until none is left.
Like every database access of nova-compute, the work is done by
nova-conductor, which must have nova_ext loaded (its notification driver).
nova_ext is loaded into nova-compute by its notification driver too
(``[oslo_messaging_notifications]driver = nova_ext``). Other Nova processes
ignore this option.
"""),
    cfg.IntOpt(
        'startup_batch_size',
        default=1000,
        min=1,
        help="""
How many records each compute-id link handles per call at startup
(``run_at_startup``).
"""),
]


def register_opts(conf):
    conf.register_group(object_migrations_group)
    conf.register_opts(object_migrations_opts, group=object_migrations_group)


def list_opts():
    return {object_migrations_group: object_migrations_opts}
