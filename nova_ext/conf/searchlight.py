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

import copy

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

GROUP = 'nova_ext_searchlight'
DEFAULT_SERVICE_TYPE = 'search'

searchlight_group = cfg.OptGroup(
    GROUP,
    title='nova_ext Searchlight options',
    help="""
How the ``searchlight`` instance list driver
(``[nova_ext_instance_list]driver = searchlight``) reaches Searchlight: a
keystoneauth section (session, auth and adapter options), with the endpoint
of service type ``search`` taken from the catalog.

Choose the credentials with ``auth_type`` and that plugin's options
(``auth_url``, ``username``, ``password``, ``project_name``,
``user_domain_name``, ``project_domain_name`` for ``password``), or point
``auth_section`` at a section that has them, such as ``[service_user]``.
The user must be an administrator for Searchlight: the driver searches with
``all_projects`` and applies Nova's project scoping itself. Unused unless
that driver is chosen.
""")


def _adapter_opts():
    opts = ks_loading.get_adapter_conf_options(include_deprecated=False)
    cfg.set_defaults(opts, service_type=DEFAULT_SERVICE_TYPE,
                     valid_interfaces=['internal', 'public'])
    return opts


def register_opts(conf):
    conf.register_group(searchlight_group)
    ks_loading.register_session_conf_options(conf, GROUP)
    ks_loading.register_auth_conf_options(conf, GROUP)
    # keystoneauth's adapter options, as register_adapter_conf_options
    # would register them, with our defaults in the options themselves (a
    # set_default would not survive ConfigOpts.reset()).
    conf.register_opts(_adapter_opts(), group=GROUP)


def _named_as_in_files(opts):
    # keystoneauth names some options with dashes (collect-timing); the
    # sample, and a configuration file, spell them with underscores, as
    # oslo.config stores them.
    renamed = []
    for opt in opts:
        opt = copy.deepcopy(opt)
        opt.name = opt.dest
        renamed.append(opt)
    return renamed


def list_opts():
    # Only what is registered: the auth plugin's own options (auth_url,
    # username, ...) are registered by keystoneauth when it loads the plugin
    # named by auth_type; registering them here as well would clash with
    # that, and make auth_url a required option of every Nova service.
    return {searchlight_group: _named_as_in_files(
        ks_loading.get_session_conf_options() +
        ks_loading.get_auth_common_conf_options() +
        _adapter_opts())}
