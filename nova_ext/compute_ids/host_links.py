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
"""The compute-id links of one compute host, run from its nova-compute.

nova-compute has no database access: Nova sends each of its database calls
to nova-conductor as a remotable method of a versioned object. This object
does the same for the compute-id links (migrations.py) of one host: called
in nova-compute, it runs in the conductor, on the host's cell database.
The conductor must have nova_ext loaded (its notification driver), so that
this object is registered there.
"""

import contextlib

from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects
from nova.objects import base as nova_base
from oslo_log import log as logging

from nova_ext.compute_ids import migrations

LOG = logging.getLogger(__name__)

#: The compute-id links, by name: the online migrations that can be run
#: for one host.
LINKERS = {cls.name: cls for cls in migrations.ALL}


@contextlib.contextmanager
def _host_cell(context, conf, host):
    """``context`` on the cell database holding ``host``'s records.

    A conductor with the API database (a superconductor, or a single-cell
    deployment) finds the cell from the host mapping; a cell conductor has
    only its own cell's database, which is the compute's.
    """
    if not conf.api_database.connection:
        yield context
        return
    mapping = objects.HostMapping.get_by_host(context, host)
    with nova_context.target_cell(context, mapping.cell_mapping) as cctxt:
        yield cctxt


@nova_base.NovaObjectRegistry.register
class NovaExtComputeIdLinks(nova_base.NovaObject):
    """Runs compute-id links for one host, where the database is."""

    OBJ_PROJECT_NAMESPACE = 'nova_ext'
    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {}

    @classmethod
    @nova_base.remotable
    def link_host(cls, context, host, names, max_count):
        """One batch of each link in ``names`` for ``host``'s records.

        :returns: ``{name: [found, done]}``.
        """
        from nova_ext import conf as ext_conf

        unknown = sorted(set(names) - set(LINKERS))
        if unknown:
            raise ValueError('not compute-id links: %s' % ', '.join(unknown))
        try:
            with _host_cell(context, ext_conf.CONF, host) as cctxt:
                return {name: list(LINKERS[name]()(cctxt, max_count,
                                                   host=host))
                        for name in names}
        except nova_exception.HostMappingNotFound:
            LOG.info('nova_ext: host %s has no host mapping yet; nothing '
                     'of it to link', host)
            return {name: [0, 0] for name in names}
