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

cell0_rebuild_group = cfg.OptGroup(
    'nova_ext_cell0_rebuild',
    title='nova_ext rebuild from cell0 options',
    help="""
Rebuilding a server that failed scheduling for lack of resources (the
spec "Enable Rebuild for Instances in cell0"). Such a server is kept by
Nova in cell0, in ERROR, never launched; stock Nova answers 409 to its
rebuild. With this enabled, nova-api (through the nova_ext paste filter)
turns it back into a build request and asks the conductor to schedule it
again, keeping its UUID.

Needs the nova_ext filter in api-paste.ini and nova_ext's table in the API
database (``nova-ext-manage api_db sync``). Servers created while this was
off cannot be rebuilt from cell0: what Nova does not keep (the requested
networks) is recorded at create time only when it is on.
""")

cell0_rebuild_opts = [
    cfg.BoolOpt(
        'enabled',
        default=False,
        help="""
Record what a rebuild from cell0 needs when servers are created, and allow
the rebuild of servers in cell0 that failed scheduling for lack of
resources (not for exceeding build retries).
"""),
    cfg.StrOpt(
        'min_microversion',
        default=None,
        sample_default='<the maximum microversion of the installed Nova>',
        help="""
The lowest compute API microversion at which a rebuild request may rebuild
a server from cell0. Requests at older microversions keep stock Nova's 409,
so that clients written against them see no change. Unset means the
maximum microversion of the installed Nova (2.104 for Nova 34), so a client
opts in by asking for it.
"""),
]


def register_opts(conf):
    conf.register_group(cell0_rebuild_group)
    conf.register_opts(cell0_rebuild_opts, group=cell0_rebuild_group)


def list_opts():
    return {cell0_rebuild_group: cell0_rebuild_opts}
