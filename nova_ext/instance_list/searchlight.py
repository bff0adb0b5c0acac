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
"""The ``searchlight`` instance list driver: Searchlight picks the page.

Searchlight (``POST /v1/search`` through python-searchlightclient, on a
keystoneauth session from ``[nova_ext_searchlight]``) answers which
instances are on the page and in what order; the query translation is in
:mod:`searchlight_query`, and what it cannot translate exactly goes to Nova.
The page's records are then read from the cells that hold them, by uuid,
with Nova's own query and hydration and exactly the ``expected_attrs`` Nova
asked for, so they are Nova's. A record that Nova's filters no longer match,
or that changed after its document was written, means Searchlight is
behind: Nova answers instead. Searchlight is retired and needs
Elasticsearch 5, so Searchlight itself is tested at the HTTP boundary only.
"""

import copy
import threading

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from nova.db.main import api as main_db_api
from nova import objects
from oslo_log import log as logging
import sqlalchemy as sa

from nova_ext import conf as ext_conf
from nova_ext.conf import searchlight as sl_conf
from nova_ext import exception
from nova_ext.instance_list import base
from nova_ext.instance_list import cellhealth
from nova_ext.instance_list import searchlight_overlay as overlay
from nova_ext.instance_list import searchlight_query as query
from nova_ext.seams.internals import cells as nova_cells
from nova_ext.seams.internals import instance_lister
from nova_ext.seams.internals import instances as nova_instances

LOG = logging.getLogger(__name__)
CONF = ext_conf.CONF


class ClientMissing(exception.NovaExtError):
    def __init__(self, error):
        super().__init__(
            'nova_ext: the searchlight instance list driver needs '
            'python-searchlightclient, which is not installed (%s). Install '
            'it into Nova\'s environment with "pip install --no-deps '
            'python-searchlightclient"; see the nova_ext install guide.'
            % error)


def _import_client():
    # Not a requirement of nova_ext (it pins PrettyTable<0.8): imported only
    # when this driver is chosen.
    try:
        from searchlightclient import client
    except ImportError as e:
        raise ClientMissing(e)
    return client


def whole_seconds_cells():
    """Whether every cell database stores times to the whole second.

    MySQL's DATETIME does, as documents do; other databases keep
    microseconds, which documents lose, so their order within a second
    would be unknown.
    """
    backends = set()
    for cell in nova_cells.all_cells():
        try:
            url = sa.engine.make_url(cell.database_connection)
        except sa.exc.ArgumentError:
            # Not a URL (Nova's test harness names cells' databases by
            # uuid): not known to be MySQL.
            return False
        backends.add(url.get_backend_name())
    return backends == {'mysql'}


def documents(hits):
    """``[(uuid, document)]`` of the hits, in their order."""
    result, seen = [], set()
    for hit in hits:
        source = hit.get('_source')
        uuid = source.get('id') if isinstance(source, dict) else None
        if not isinstance(uuid, str) or uuid in seen:
            raise base.Unservable('a document without or with a repeated '
                                  'id: %r' % uuid)
        seen.add(uuid)
        result.append((uuid, source))
    return result


def check_fresh(uuid, source, row, plan):
    """Raise Unservable unless the document shows the row as it is.

    A row updated after its document may sort or filter differently than
    Searchlight thinks; so may one whose sort values differ from the
    document's (a change within the document's second).
    """
    if query.changed_since(source, row):
        raise base.Unservable('searchlight is behind for %s: row updated '
                              '%s, document %r' % (
                                  uuid,
                                  query.second(row['updated_at'] or
                                               row['created_at']),
                                  source.get('updated_at')))
    for field in plan.sort_fields:
        value = row[query.SORT_COLUMNS[field]]
        if field == 'created_at':
            same = query.second(value) == query.second(source.get(field))
        else:
            same = value == source.get(field)
        if not same:
            raise base.Unservable('searchlight is behind for %s: %s is %r, '
                                  'its document says %r'
                                  % (uuid, field, value, source.get(field)))


def cell_filters(filters, uuids):
    """Nova's filters, narrowed to ``uuids`` (within its own uuid filter)."""
    narrowed = copy.deepcopy(filters)
    if 'uuid' in filters:
        wanted = filters['uuid']
        wanted = set(wanted) if isinstance(
            wanted, (list, tuple, set, frozenset)) else {wanted}
        uuids = [uuid for uuid in uuids if uuid in wanted]
    narrowed['uuid'] = list(uuids)
    return narrowed


def cell_records(ctx, filters, uuids, attrs, timeout, building=False):
    """The rows of ``uuids`` that Nova's filters match, from their cells.

    One query per cell holding some of them, in parallel, as Nova's own
    list runs it: Nova's filters narrowed to the uuids, the caller's
    context (so Nova's project scoping), the joins ``attrs`` need.

    :param building: whether to leave out build requests (uuids mapped to
        no cell yet) rather than raise Unservable.
    :returns: ``{uuid: row}``, each from the cell its mapping names.
    """
    cells, cell_of = {}, {}
    for mapping in objects.InstanceMappingList.get_by_instance_uuids(
            ctx, uuids):
        if mapping.cell_mapping is None:
            if building:
                continue
            raise base.Unservable('%s is a build request, which Nova lists '
                                  'itself' % mapping.instance_uuid)
        cells[mapping.cell_mapping.uuid] = mapping.cell_mapping
        cell_of[mapping.instance_uuid] = mapping.cell_mapping.uuid
    narrowed = cell_filters(filters, [u for u in uuids if u in cell_of])
    columns = nova_instances.expected_cols(list(attrs))

    def read(cctx):
        return main_db_api.instance_get_all_by_filters_sort(
            cctx, narrowed, columns_to_join=columns)

    results = nova_cells.scatter(
        ctx, [cells[uuid] for uuid in sorted(cells)], read, timeout=timeout)
    rows = {}
    for cell_uuid, result in sorted(results.items()):
        failure = nova_cells.failure(result)
        if failure is not None:
            raise base.Unservable('cell %s did not answer: %s' % (
                cell_uuid, failure))
        for row in result:
            if cell_of.get(row['uuid']) == cell_uuid:
                rows[row['uuid']] = row
    return rows


def marker_record(ctx, marker):
    """The marker's row, found as Nova's own list finds it.

    :raises nova.exception.MarkerNotFound: as Nova would.
    """
    lister = instance_lister.InstanceLister(None, None)
    return lister.marker_record(ctx, marker)[1]


def page(ctx, docs, rows, attrs, plan):
    """The page, as Nova builds it: an InstanceList in Searchlight's order.

    :raises Unservable: if any document is not its row as it is now.
    """
    ordered = []
    for uuid, source in docs:
        row = rows.get(uuid)
        if row is None:
            raise base.Unservable('searchlight is behind for %s: no cell '
                                  'has it as the filters ask' % uuid)
        check_fresh(uuid, source, row, plan)
        ordered.append(row)
    # As Nova's get_instance_objects_sorted: the objects carry the
    # caller's context, and fault (joined in the query) is not set on them.
    attrs = [attr for attr in attrs if attr != 'fault']
    return nova_instances.make_instance_list(ctx, ordered, attrs)


def _hits(body):
    """The hits of a complete Elasticsearch answer."""
    try:
        if body.get('timed_out'):
            raise base.Unavailable('Elasticsearch timed out')
        failed = body.get('_shards', {}).get('failed', 0)
        if failed:
            raise base.Unavailable('%d Elasticsearch shards failed' % failed)
        hits = body['hits']['hits']
    except (AttributeError, KeyError, TypeError):
        raise base.Unavailable('not an Elasticsearch answer: %.200r' % body)
    if not isinstance(hits, list):
        raise base.Unavailable('not an Elasticsearch answer: %.200r' % body)
    return hits


class SearchlightDriver(base.InstanceListDriver):
    """Lists instances from Searchlight's Nova server documents."""

    name = 'searchlight'

    def __init__(self, conf=None):
        self.conf = conf or CONF
        self._client_module = _import_client()
        self.cells = cellhealth.CellHealth()
        self._lock = threading.Lock()
        self._adapter = None
        self._client = None
        self._endpoint = None

    def _get_client(self):
        group = sl_conf.GROUP
        try:
            with self._lock:
                if self._adapter is None:
                    auth = ks_loading.load_auth_from_conf_options(
                        self.conf, group)
                    if auth is None:
                        raise base.Unavailable('[%s]auth_type is not set'
                                               % group)
                    session = ks_loading.load_session_from_conf_options(
                        self.conf, group, auth=auth)
                    self._adapter = ks_loading.load_adapter_from_conf_options(
                        self.conf, group, session=session, auth=auth)
            # The catalog (or endpoint_override) picks the endpoint; the
            # client is given it, since it only knows one interface.
            endpoint = self._adapter.get_endpoint()
        except (ks_exc.ClientException, TypeError) as e:
            raise base.Unavailable('Searchlight endpoint: %s: %s'
                                   % (type(e).__name__, e))
        if not endpoint:
            raise base.Unavailable('no %s endpoint in the catalog'
                                   % self._adapter.service_type)
        with self._lock:
            if endpoint != self._endpoint:
                timeout = (self.conf[group].timeout or
                           self.conf.nova_ext_index.query_timeout)
                self._client = self._client_module.Client(
                    '1', session=self._adapter.session,
                    endpoint_override=endpoint, timeout=timeout)
                self._endpoint = endpoint
            return self._client

    def search(self, body):
        """POST /v1/search; the hits, or Unavailable."""
        client = self._get_client()
        try:
            result = client.search.search(**body)
        except ks_exc.ClientException as e:
            raise base.Unavailable('Searchlight: %s: %s'
                                   % (type(e).__name__, e))
        except (ValueError, AttributeError) as e:
            # A body that is not a JSON object: a proxy's error page, say.
            raise base.Unavailable('Searchlight answered no JSON object: %s'
                                   % e)
        return _hits(result.to_dict())

    def check_changes(self, ctx, filters):
        """Hand to Nova a list that a change Searchlight lacks would alter.

        See :mod:`searchlight_overlay`; capture's marks are in the index's
        pending table.
        """
        timeout = self.conf.nova_ext_index.query_timeout

        def records(cctx, cfilters, uuids):
            return cell_records(cctx, cfilters, uuids, [], timeout,
                                building=True)

        def fetch(body):
            return documents(self.search(body))

        overlay.check(self.conf, ctx, filters, records, fetch)

    def marker_values(self, ctx, marker, plan):
        """The marker document's sort values, once checked against its row.

        The row is looked up first, as Nova's list looks it up, so that an
        unknown marker is Nova's MarkerNotFound.
        """
        row = marker_record(ctx, marker)
        hits = self.search(query.marker_body(marker, plan.sort_fields))
        source = hits[0].get('_source') if hits else None
        source = source if isinstance(source, dict) else {}
        if source.get('id') != marker:
            raise base.Unservable('searchlight is behind for %s: the marker '
                                  'has no document' % marker)
        check_fresh(marker, source, row, plan)
        values = [source.get(field) for field in plan.sort_fields]
        if None in values:
            raise base.Unservable('marker %s lacks a sort value' % marker)
        return values

    def get_instance_objects_sorted(self, ctx, filters, limit, marker,
                                    expected_attrs, sort_keys, sort_dirs,
                                    cell_down_support=False):
        plan = query.plan(ctx, filters, limit, sort_keys, sort_dirs)
        down = self.cells.down_cells(ctx, self.conf)
        if down:
            raise base.Unservable('cells %s are down; Nova lists them its '
                                  'own way' % ', '.join(down))
        if plan.needs_whole_seconds and not whole_seconds_cells():
            raise base.Unservable('created_at order: a cell database keeps '
                                  'sub-second times that documents lose')
        if self.conf.nova_ext_index.capture:
            self.check_changes(ctx, filters)
        values = None
        if marker is not None:
            values = self.marker_values(ctx, marker, plan)
        attrs = list(expected_attrs or [])
        docs = []
        if limit:
            docs = documents(self.search(plan.body(values)))
        if len(docs) > limit:
            raise base.Unavailable('Searchlight returned %d hits for a '
                                   'limit of %d' % (len(docs), limit))
        rows = {}
        if docs:
            rows = cell_records(ctx, filters, [uuid for uuid, _ in docs],
                                attrs, self.conf.nova_ext_index.query_timeout)
        result = page(ctx, docs, rows, attrs, plan)
        LOG.debug('Searchlight picked the %d instances of the page',
                  len(result))
        return result, []
