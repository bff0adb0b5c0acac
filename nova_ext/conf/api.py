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

api_group = cfg.OptGroup(
    'nova_ext_api',
    title='nova_ext API options',
    help="""
Options for the nova_ext paste filter in nova-api.

The filter is attached by adding ``nova_ext`` to the
``openstack_compute_api_v21`` pipeline in api-paste.ini, right after
``keystonecontext``. It only intercepts requests for which a nova_ext
capability is enabled; with none enabled it hands nova-api's own
application back to paste unchanged.
""")

api_opts = [
    cfg.ListOpt(
        'handlers',
        default=[],
        help="""
API handlers to enable, by entry point name in the ``nova_ext.api.handlers``
namespace.

A handler is also enabled when the capability it serves is switched on in
that capability's own option group (for example
``[nova_ext_instance_list]driver``); this list is for handlers that have no
other switch, and for third-party handlers.
"""),
]


def register_opts(conf):
    conf.register_group(api_group)
    conf.register_opts(api_opts, group=api_group)


def list_opts():
    return {api_group: api_opts}
