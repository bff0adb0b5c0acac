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
"""The ``index`` instance list driver: one query over nova_ext's index.

The index database holds every cell's instance rows in Nova's own schema,
so this driver runs Nova's own list code over it: the same
``InstanceLister`` (marker handling, ``uuid`` tie-breaker, batching), the
same ``instance_get_all_by_filters_sort`` (every filter, sort key and
``deleted``/``changes-since`` rule) and the same object hydration. The index
is simply presented to that code as if it were one cell holding everything.
Only what cannot be stored is fetched at request time: the services behind
``host_status``, whose liveness changes with every heartbeat (see
``services``).
"""

import functools
import time
import uuid as uuid_lib

from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova import exception as nova_exception
from nova import objects
from oslo_db import exception as db_exc
from oslo_log import log as logging
import sqlalchemy as sa

from nova_ext import conf as ext_conf
from nova_ext import direct_reads
from nova_ext import exception
from nova_ext.index.apply import source
from nova_ext.index import db
from nova_ext.index import generation
from nova_ext.index import ids
from nova_ext.index.marks import holders
from nova_ext.index import schema
from nova_ext.index.upkeep import metrics
from nova_ext.index.upkeep import migration
from nova_ext.index.upkeep import rules
from nova_ext.instance_list import base
from nova_ext.instance_list import catch_up
from nova_ext.instance_list import cellhealth
from nova_ext.instance_list import index_checks
from nova_ext.instance_list import index_reads
from nova_ext.instance_list import page_cache
from nova_ext.instance_list import page_patch
from nova_ext.instance_list import services
from nova_ext.seams.internals import cells as nova_cells
from nova_ext.seams.internals import instance_lister
from nova_ext.seams.internals import instances as nova_instances
from nova_ext.seams.internals import orm

CONF = ext_conf.CONF
LOG = logging.getLogger(__name__)
_NAMESPACE = uuid_lib.UUID('6e6f7661-5f65-7874-2d69-6e6465780000')
#: The name of the index's cell mapping (it is in no cell list of Nova's).
CELL_NAME = 'nova_ext_index'


def index_cell(conf):
    """The index, as a cell mapping Nova's list code can target.

    Nova's ``target_cell`` takes a cell's connection from its per-process
    cache, ``nova.context.CELL_CACHE``, before making one; the index's own
    engine (with its SQLite settings) is put there, under a uuid derived from
    the URL so that no other database can be mistaken for it.
    """
    url = db.connection_url(conf)
    cell = objects.CellMapping(
        uuid=str(uuid_lib.uuid5(_NAMESPACE, url)), name=CELL_NAME,
        database_connection=url, transport_url='none:///', disabled=False)
    nova_cells.cache_database(cell.uuid, db.get_context_manager(conf))
    return cell


#: Seconds publishing the counters waits for the index's write lock.
PUBLISH_WAIT = 0.1


class _IndexLister(instance_lister.InstanceLister):
    """Nova's lister over the single index 'cell'."""

    def __init__(self, cell, sort_keys, sort_dirs, batch_size):
        super().__init__(sort_keys, sort_dirs, cells=[cell],
                         batch_size=batch_size)
        self.cell = cell

    def marker_record(self, ctx, marker):
        # Nova looks the marker up in the cell its mapping names; the index
        # holds every cell, so it is looked up there, as Nova does:
        # elevated, deleted included, without joins.
        check_marker_mapped(ctx, marker)
        elevated = ctx.elevated(read_deleted='yes')
        with nova_context.target_cell(elevated, self.cell) as ictx:
            try:
                db_inst = main_db_api.instance_get_by_uuid(
                    ictx, marker, columns_to_join=[])
            except nova_exception.InstanceNotFound:
                db_inst = None
        if db_inst is None:
            raise base.Unservable('marker %s is not in the index yet'
                                  % marker)
        return self.cell.uuid, db_inst


def check_marker_mapped(ctx, marker):
    """Raise MarkerNotFound, as Nova does, for a marker without a mapping.

    As in Nova, a server without a mapping (archived) is no marker,
    whatever the index still holds of it.
    """
    try:
        objects.InstanceMapping.get_by_instance_uuid(ctx, marker)
    except nova_exception.InstanceMappingNotFound:
        raise nova_exception.MarkerNotFound(marker=marker)


def _restore_ids(instances):
    """Give instances their cell-local ids back; returns {uuid: cell id}."""
    cells = {}
    for inst in instances:
        cells[inst.uuid] = ids.cell_id(inst.id)
        inst.id = ids.source_id(inst.id)
        inst.obj_reset_changes(['id'])
    return cells


class IndexDriver(base.RowsDriver):
    """Lists instances from nova_ext's global instance index."""

    name = 'index'

    def __init__(self, conf=None):
        self.conf = conf or CONF
        self.cells = cellhealth.CellHealth()
        self.services = services.Services(self.conf)
        self.catch_up = catch_up.CatchUp(self.conf)
        # Checked at the first list and after the index failed, not at
        # every list; the revision an error was logged for.
        self._schema_checked = False
        self._schema_logged = None

    def _check_schema(self):
        if self._schema_checked:
            return
        try:
            reason = migration.problem(self.conf)
        except (sa.exc.SQLAlchemyError, db_exc.DBError) as e:
            raise base.Unavailable('index database unreachable: %s' % e)
        if reason is not None:
            if self._schema_logged != reason:
                LOG.error('nova_ext: %s; Nova answers list requests until '
                          'then', reason)
                self._schema_logged = reason
            raise base.Unavailable(reason)
        self._schema_checked = True

    def is_available(self):
        return rules.unrecorded_lag(self.unrecorded_lag(),
                                    self.conf.nova_ext_index.max_lag) is None

    def report_stats(self, counts):
        # Best effort: a short wait for another writer's lock (under
        # eventlet, SQLite's wait is the whole process's). With the
        # counters, what only this process knows of its choice.
        count, seconds = catch_up.unrecorded()
        pages = page_cache.cache(self.conf)
        metrics.publish(db.get_engine(self.conf), self.name, counts,
                        timeout=PUBLISH_WAIT,
                        unrecorded=count, unrecorded_lag=seconds,
                        pages=None if pages is None else pages.counts(),
                        silent={'holders': catch_up.silent(self.conf),
                                'window': holders.window(self.conf)})

    def unrecorded_lag(self):
        return catch_up.unrecorded()[1]

    def prepare(self, ctx):
        # The cells' check, while the build requests are read.
        self.cells.begin(ctx, self.conf)

    def records(self, ctx, filters, limit, marker, attrs, sort_keys,
                sort_dirs, cell_down_support=False, catch_up=True):
        """One page of index rows, as Nova's instance query returns them.

        The arguments are those of :meth:`get_instance_objects_sorted`,
        less ``services``, which the index cannot hold. Each row is a dict
        with its joins; its ``id`` is the index id (see ``ids``).

        :param catch_up: whether this read lists a page: the cells are
            checked and the changes recorded applied first (``catch_up``).
            Not for more rows of a page its request listed a moment ago:
            that request did both, and the rows are the index's.
        """
        columns = orm.columns()
        # Before Nova's query code changes the filters it is handed.
        query = (filters, limit, marker, attrs, sort_keys, sort_dirs,
                 cell_down_support, columns)
        index_checks.tombstones(self.conf, filters)
        index_checks.regex_dialect(self.conf, filters)
        index_checks.cell_local_order(sort_keys)
        check = self.catch_up.check(ctx, self.cells) if catch_up else None
        try:
            self._check_schema()
            too_old = rules.unrecorded_lag(self.unrecorded_lag(),
                                           self.conf.nova_ext_index.max_lag)
            if too_old:
                raise base.Unavailable(too_old)
        except base.Unavailable:
            if check is not None:
                # A cell down is the reason Nova answers, before any other.
                check.make()
            raise
        settled = None
        try:
            if check is not None:
                settled = self.catch_up(ctx, check)
        except (sa.exc.SQLAlchemyError, db_exc.DBError) as e:
            self._schema_checked = False
            raise base.Unavailable('index database unreachable: %s' % e)
        pages = page_key = now = None
        # Only the narrowed rows of rendered pages: flat dicts.
        if catch_up and columns is not None:
            pages, page_key, now = self.page_key(ctx, query, settled)
        if page_key is not None:
            kept, at = page_cache.current_at(
                pages, page_key, now, db.get_engine(self.conf),
                functools.partial(page_patch.bring, self, ctx, query))
            if kept is not None:
                if marker is not None:
                    check_marker_mapped(ctx, marker)
                records = base.Page(kept)
                records.memo = kept.memo
                # Kept or brought: the index's rows at that generation. A
                # page listed anew may have read a later state than ``now``.
                records.generation = at
                self.catch_up.check_archived(ctx, records)
                return records
        records, lister, error = self._list(
            ctx, filters, limit, marker, attrs, sort_keys, sort_dirs,
            cell_down_support)
        if lister.timed_out:
            timeout = self.conf.nova_ext_index.query_timeout
            took = base.probe(self, timeout)
            if base.probe_is_slow(took, timeout):
                raise base.Unavailable('the index query timed out; the '
                                       'index answers a probe in %.2f s'
                                       % took)
            raise base.Unservable("this request's index query timed out")
        if lister.failed or error is not None:
            error = '%s: %s' % (type(error).__name__, error)
            broken = self.schema_error()
            if broken is not None:
                self._schema_checked = False
                raise base.Unavailable('the index query failed: %s; the '
                                       'index itself: %s' % (error, broken))
            # The index is whole: what failed is this request's query, on
            # its data or its filters (an invalid regular expression, which
            # Nova's own query fails on too). Nova answers it, and the index
            # stays on for the others.
            raise base.Unservable('this request\'s index query failed: %s'
                                  % error)
        self.catch_up.check_archived(ctx, records)
        if page_key is not None:
            page_cache.keep(pages, page_key, now,
                            page_cache.Rows(dict(row) for row in records))
        return records

    def _list(self, ctx, filters, limit, marker, attrs, sort_keys,
              sort_dirs, cell_down_support):
        """Nova's lister over the index: ``(records, lister, error)``."""
        cell = self.cell()
        batch_size = instance_lister.batch_size(limit, [cell])
        lister = _IndexLister(cell, sort_keys, sort_dirs, batch_size)
        records = None
        try:
            records = list(lister.get_records_sorted(
                ctx, filters, limit, marker,
                columns_to_join=nova_instances.expected_cols(attrs),
                cell_down_support=cell_down_support))
            error = lister.error
        except nova_exception.NovaException:
            # Nova's answer to the request itself (MarkerNotFound).
            raise
        except Exception as e:
            # Nova's merge re-raises some database errors as another (it
            # builds a DBAPIError from its args alone: a TypeError), as it
            # does for Nova's own answer.
            error = e
        return records, lister, error

    def list_rows(self, ctx, filters, limit, marker, attrs, sort_keys,
                  sort_dirs, cell_down_support):
        """The rows of a query over the index as they are; None if it fails.

        For more rows of a page whose request listed it (``page_patch``):
        the same query, other filters or marker.
        """
        try:
            records, lister, error = self._list(
                ctx, filters, limit, marker, attrs, sort_keys, sort_dirs,
                cell_down_support)
        except (nova_exception.NovaException, base.Unservable):
            return None
        if lister.timed_out or lister.failed or error is not None:
            return None
        return records

    def cell(self):
        """The index, as the cell mapping Nova's query code targets."""
        return index_cell(self.conf)

    def page_key(self, ctx, query, now=None):
        """``(page cache, key of query, generation now)``, or Nones.

        Read after the request's catch-up, before its query.

        :param now: the generation the catch-up read with the finding that
            no change waited, if it did: no need to read it again.
        """
        pages = page_cache.cache(self.conf)
        if pages is None:
            return None, None, None
        if now is None:
            now = generation.read(db.get_engine(self.conf),
                                  direct_reads.first)
        if now is None:
            return None, None, None
        return pages, page_cache.key(ctx, query), now

    def schema_error(self):
        """What is wrong with the index's tables, or None.

        Each table Nova's list query reads, with every column of Nova's
        model, asked for no rows.
        """
        try:
            with db.get_engine(self.conf).connect() as conn:
                for table in source.tables() + [schema.INSTANCES]:
                    conn.execute(sa.select(table).limit(0)).all()
        except (sa.exc.SQLAlchemyError, db_exc.DBError) as e:
            return '%s: %s' % (type(e).__name__, e)
        return None

    def probe(self):
        started = time.monotonic()
        if self.schema_error() is not None:
            return float('inf')
        return time.monotonic() - started

    def versions(self, uuids):
        """``{uuid: when the index last wrote the row}`` (render cache)."""
        return index_reads.versions(self, uuids)

    def network_info(self, uuids):
        return index_reads.network_info(self, uuids)

    def version_column(self):
        return index_reads.VERSION_COLUMN

    def spec_column(self):
        return index_reads.SPEC_COLUMN

    def spec_digests(self, uuids):
        return index_reads.spec_digests(self, uuids)

    def volumes(self, ctx, uuids, generation=None):
        """The volumes of some instances, as Nova's server view shows them.

        :returns: ``{uuid: [{'volume_id', 'delete_on_termination'}]}``,
            see ``index_reads.volumes``.
        """
        return index_reads.volumes(self, ctx, uuids, generation)

    def fill_services(self, ctx, instances, cell_of):
        self.services.fill(ctx, instances, cell_of)

    def metadata(self, ctx, uuids, system=False):
        """The (system) metadata rows of some instances, as plain dicts.

        :returns: ``{uuid: [{'key', 'value', 'deleted'}]}``, see
            ``index_reads.metadata``.
        """
        return index_reads.metadata(self, ctx, uuids, system=system)

    def get_instance_objects_sorted(self, ctx, filters, limit, marker,
                                    expected_attrs, sort_keys, sort_dirs,
                                    cell_down_support=False):
        attrs = list(expected_attrs or [])
        want_services = 'services' in attrs
        if want_services:
            attrs.remove('services')
        records = self.records(ctx, filters, limit, marker, attrs,
                               sort_keys, sort_dirs, cell_down_support)
        if 'fault' in attrs:
            # Joined in the query, as in Nova's get_instance_objects_sorted.
            attrs.remove('fault')
        try:
            result = nova_instances.make_instance_list(ctx, records, attrs)
        except exception.UnsupportedNovaVersion:
            raise
        except Exception as e:
            # A stored value Nova's Instance refuses: Nova's own list
            # fails on it, and its answer is the answer.
            raise base.Unservable('Nova cannot build the instances of the '
                                  'page: %s: %s' % (type(e).__name__, e))
        cell_of = _restore_ids(result)
        if want_services:
            self.fill_services(ctx, result, lambda inst: cell_of[inst.uuid])
        return result, []
