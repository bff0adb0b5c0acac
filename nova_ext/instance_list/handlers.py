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
"""The API handlers of the instance index (``nova_ext.api.handlers``).

``servers-list``: server lists rendered from the index. Switched on by
``[nova_ext_instance_list]fast_render`` with the ``index`` driver. For
``GET /servers`` and ``GET /servers/detail`` it has the page rendered from
the index rows (``nova_ext.instance_list.render``). Whatever it does not
render is answered by Nova: a request Nova rejects, a page with build
requests or an IP filter (through the index driver as usual), and anything
the index driver declines or fails at (then through Nova's own cells path,
counted once). With ``gc_freeze``, the first list it renders in a process
has that process's objects frozen (``nova_ext.seams.internals.heap``).

``index-refresh``: changes Nova makes without notifying. The instance
index follows Nova's notifications, but since microversion 2.85
``PUT /servers/{id}/os-volume_attachments/{volume_id}`` changes a volume's
``delete_on_termination``, which the server list shows, and Nova sends no
notification for it. Once Nova has answered such a request with success,
this handler re-reads the server into the index before the answer goes
back, so the next list shows the change. Switched on with the index
(``[nova_ext_instance_list]driver = index``). If the index cannot be
written, Nova's answer still goes back: the server is left marked pending
where the mark could be made, and the reconcile pass finds the change
otherwise (its fingerprints cover the block device mappings).
"""

from oslo_log import log as logging

from nova_ext.api import base
from nova_ext import conf as ext_conf
from nova_ext import exception
from nova_ext.index.apply import refresh
from nova_ext.instance_list import base as list_base
from nova_ext.instance_list import render
from nova_ext.instance_list import serving
from nova_ext.seams.internals import heap

LOG = logging.getLogger(__name__)


class ServersListHandler(base.Handler):
    """Renders server lists from the instance index."""

    routes = (base.SERVERS_INDEX, base.SERVERS_DETAIL)

    @classmethod
    def enabled(cls, conf):
        group = conf.nova_ext_instance_list
        return group.driver == 'index' and group.fast_render

    def __init__(self, conf=None):
        self.conf = conf or ext_conf.CONF
        render.attach()

    def __call__(self, request, application):
        selector = serving.selector()
        # Read per request, so that a benchmark can compare both in one
        # nova-api; nothing reloads nova-api's configuration otherwise.
        fast = self.conf.nova_ext_instance_list.fast_render
        if (selector is None or not fast or
                not isinstance(selector.driver, list_base.RowsDriver)):
            return request.get_response(application)
        try:
            return self._respond(selector, request, application)
        finally:
            # Whichever way it went: a request declined by the selector
            # is answered by Nova's own function, which counts nothing.
            selector.report()

    def _respond(self, selector, request, application):
        route, _ = base.route_of(request)
        try:
            response = render.respond(self.conf, selector, request,
                                      detail=route == base.SERVERS_DETAIL)
        except render.NotRendered as e:
            selector.stats.add('handed', str(e))
            LOG.debug('nova_ext leaves %s to Nova to render: %s',
                      request.path_qs, e)
            return request.get_response(application)
        except render.Declined:
            with selector.stock_only():
                return request.get_response(application)
        if response is None:
            return request.get_response(application)
        selector.stats.add('rendered')
        if self.conf.nova_ext_instance_list.gc_freeze:
            _freeze_once()
        return response


def _freeze_once():
    """The process's objects frozen, after its first rendered list.

    By then it has loaded what a list needs (its database mappings, the
    policy rules, the connections to the cells), and the caches hold
    their first page.
    """
    try:
        heap.freeze_once()
    except exception.UnsupportedNovaVersion as e:
        LOG.warning('nova_ext: gc_freeze is ignored: %s', e)


class IndexRefreshHandler(base.Handler):
    """Re-reads a server into the index after an unannounced change."""

    routes = (base.VOLUME_ATTACHMENT_UPDATE,)

    @classmethod
    def enabled(cls, conf):
        return conf.nova_ext_instance_list.driver == 'index'

    def __init__(self, conf=None):
        self.conf = conf or ext_conf.CONF

    def __call__(self, request, application):
        response = request.get_response(application)
        if response.status_int >= 400:
            return response
        _route, urlvars = base.route_of(request)
        server_id = urlvars['server_id']
        try:
            _totals, failed = refresh.refresh_now(
                request.environ['nova.context'], self.conf, [server_id])
        except Exception as e:
            # Nova made the change and answered: whatever fails here must
            # not turn its answer into an error.
            LOG.warning('nova_ext index: could not read server %s again '
                        'after a change of its volume attachments (%s: %s); '
                        'the reconcile pass will', server_id,
                        type(e).__name__, e)
        else:
            if failed:
                LOG.warning('nova_ext index: server %s is left for the '
                            'indexer to read again', server_id)
        return response
