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
"""nova-scheduler: append nova_ext request filters to Nova's pipeline.

Nova has no configuration seam for request filters: they are the list
``nova.scheduler.request_filter.ALL_REQUEST_FILTERS``, which
``process_reqspec`` walks for every scheduling request. nova_ext is loaded
into nova-scheduler through a seam Nova does have,
``[filter_scheduler]available_filters``: the scheduler's HostManager calls
each function listed there for host filter classes. :func:`attach` is such
a function. It returns no host filter; calling it appends the enabled
request filters to Nova's list, once, on the Nova versions in
``nova_ext.compat.TESTED_NOVA`` only.
"""

from nova.scheduler import request_filter
from oslo_log import log as logging

from nova_ext import compat
from nova_ext import conf as ext_conf
from nova_ext import scheduler
from nova_ext import startup_log

LOG = logging.getLogger(__name__)

POINT = 'nova.scheduler.request_filter.ALL_REQUEST_FILTERS'


def _as_nova_filter(name, plugin):
    # Nova's filters are plain functions; trace_request_filter logs their
    # timing under their __name__, so give ours a recognisable one.
    def nova_ext_request_filter(ctxt, request_spec):
        return plugin(ctxt, request_spec)
    nova_ext_request_filter.__name__ = 'nova_ext:%s' % name
    traced = request_filter.trace_request_filter(nova_ext_request_filter)
    traced.nova_ext_name = name
    return traced


def attached():
    """Names of the nova_ext request filters in Nova's pipeline, in order."""
    return [f.nova_ext_name for f in request_filter.ALL_REQUEST_FILTERS
            if hasattr(f, 'nova_ext_name')]


def attach():
    """Attach the enabled request filters; return no host filter classes.

    Idempotent: HostManager is built more than once in some deployments
    (and in every functional test), so earlier nova_ext entries are replaced,
    never duplicated. A plugin that fails to load stops nova-scheduler with
    a NovaExtError naming it.
    """
    if not compat.tested(POINT, LOG):
        return []
    filters = [_as_nova_filter(name, plugin) for name, plugin in
               scheduler.load_request_filters(ext_conf.CONF)]
    pipeline = request_filter.ALL_REQUEST_FILTERS
    pipeline[:] = [f for f in pipeline if not hasattr(f, 'nova_ext_name')]
    pipeline.extend(filters)
    startup_log.info(LOG, 'nova_ext attached to nova-scheduler; request '
                     'filters: %s', attached() or 'none')
    return []
