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
"""What a rendered page reads of the index beside its rows.

The volumes and the metadata of the page's servers, read with Nova's own
queries over the index (``index.IndexDriver`` targets the index as a cell),
as plain dicts instead of ORM objects. With the page cache, the volumes of
a page are kept under the index's generation and brought up to date, as
its rows are (``page_cache``). And what the index's book says of each
row: its version, and its request spec's digest.
"""

import collections
import contextlib
import functools
import types

from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova.db.main import models
from nova import objects
import sqlalchemy as sa

from nova_ext.index.apply import source
from nova_ext.index.apply import writer
from nova_ext.index import db
from nova_ext.index import schema
from nova_ext.instance_list import page_cache


_BOOK = schema.INSTANCES
#: Each row's version in the book: when the index last wrote it.
VERSION_COLUMN = (_BOOK.c.read_at, _BOOK.c.uuid)
#: Each row's request spec digest in the book: NULL where the book's digest
#: predates that part. One object, a part of the keys of the page cache.
#: SQLite, MySQL and PostgreSQL all know substr(text, from, length).
SPEC_COLUMN = (sa.func.nullif(sa.func.substr(
    _BOOK.c.digest, writer.SPEC_AT, writer.WIDTH), ''), _BOOK.c.uuid)


def versions(driver, uuids):
    with db.get_engine(driver.conf).connect() as conn:
        return dict(conn.execute(sa.select(_BOOK.c.uuid, _BOOK.c.read_at)
                                 .where(_BOOK.c.uuid.in_(list(uuids)))).all())


def network_info(driver, uuids):
    cache = source.INFO_CACHES
    with db.get_engine(driver.conf).connect() as conn:
        return conn.execute(
            sa.select(_BOOK.c.uuid, _BOOK.c.read_at, cache.c.network_info)
            .join(cache, cache.c.instance_uuid == _BOOK.c.uuid)
            .where(_BOOK.c.uuid.in_(list(uuids)))).all()


def spec_digests(driver, uuids):
    with db.get_engine(driver.conf).connect() as conn:
        return writer.spec_digests(conn, uuids)


@contextlib.contextmanager
def reading(driver, ctx):
    """``ctx`` targeted at the index, in a reader transaction."""
    with nova_context.target_cell(ctx, driver.cell()) as ictx:
        with main_db_api.get_context_manager(ictx).reader.using(ictx):
            yield ictx


def volumes(driver, ctx, uuids, generation=None):
    """The volumes of some instances, as Nova's server view shows them.

    Nova's view reads every cell of the page for the block device mappings
    of its instances; the index holds them, and answers the same query (the
    context's ``read_deleted`` applies, as in the cells), only without
    making ORM objects of its rows.

    Nova's query has no ORDER BY: a server's volumes come in the order of
    whichever table index its cell's database picks, which depends on how
    that database's schema was made. The volumes of a server that has
    several are therefore read from its cell, as Nova reads them, at each
    request; a page reads the cells only for those.

    :param generation: the index's generation the page's rows are the
        state at, if known: the page's volumes are read at it (kept from
        then, or brought to it), which needs no read of the generation of
        their own. Otherwise the generation is read now, after the rows:
        volumes older than the rows they are shown with would be an answer
        Nova, which reads them after its instances, never gives.
    :returns: ``{uuid: [{'volume_id', 'delete_on_termination'}]}``; each
        server's from the index as kept, read-only (a tuple of read-only
        mappings): Nova's view only reads them.
    """
    if not uuids:
        return collections.defaultdict(list)
    pages, key, now = driver.page_key(ctx, ('volumes', tuple(uuids)),
                                      generation)
    indexed = None
    if key is not None:
        indexed = page_cache.current(
            pages, key, now, db.get_engine(driver.conf),
            functools.partial(_bring_volumes, driver, ctx, uuids))
    if indexed is None:
        indexed = _indexed_volumes(driver, ctx, uuids)
        if key is not None:
            page_cache.keep(pages, key, now, indexed)
    found = collections.defaultdict(list, indexed.shown)
    if indexed.several:
        found.update(_volumes_from_cells(driver, ctx, indexed.several))
    return found


class _Volumes(object):
    """The index's volumes of a page, as kept: read-only, shared.

    :param shown: ``{uuid: (read-only volume dict, ...)}``.
    """

    def __init__(self, shown):
        self.shown = shown
        # Nova's view shows the mappings that have a volume: the servers
        # with several are read from their cells (:func:`volumes`).
        self.several = tuple(
            uuid for uuid, listed in shown.items()
            if sum(1 for v in listed if v['volume_id']) > 1)


def _indexed_volumes(driver, ctx, uuids):
    """:class:`_Volumes` of the index's mappings of ``uuids``."""
    model = models.BlockDeviceMapping
    found = collections.defaultdict(list)
    with reading(driver, ctx) as ictx:
        # Nova's query and rules, reading the three columns the view
        # shows: a mapping's other columns (connection info, ...) are most
        # of its bytes.
        query = main_db_api.model_query(ictx, model).filter(
            model.instance_uuid.in_(uuids)).with_entities(
            model.instance_uuid, model.volume_id,
            model.delete_on_termination)
        for uuid, volume_id, delete_on_termination in query:
            found[uuid].append(types.MappingProxyType(
                {'volume_id': volume_id,
                 'delete_on_termination': delete_on_termination}))
    return _Volumes({uuid: tuple(listed) for uuid, listed in found.items()})


def _bring_volumes(driver, ctx, uuids, indexed, changed):
    """``indexed`` with the volumes of the ``changed`` instances read again.

    A server's volumes are those of its own mappings: the others' are as
    kept.
    """
    again = [uuid for uuid in uuids if uuid in changed]
    if not again:
        return indexed
    held = dict(indexed.shown)
    for uuid in again:
        held.pop(uuid, None)
    held.update(_indexed_volumes(driver, ctx, again).shown)
    return _Volumes(held)


def _volumes_from_cells(driver, ctx, uuids):
    book = schema.INSTANCES
    with db.get_engine(driver.conf).connect() as conn:
        cells = conn.execute(sa.select(book.c.uuid, book.c.cell_uuid)
                             .where(book.c.uuid.in_(uuids))).all()
    by_cell = collections.defaultdict(list)
    for uuid, cell_uuid in cells:
        by_cell[cell_uuid].append(uuid)
    found = {}
    for cell_uuid, cell_uuids in by_cell.items():
        cell = objects.CellMapping.get_by_uuid(ctx, cell_uuid)
        with nova_context.target_cell(ctx, cell) as cctx:
            bdms = objects.BlockDeviceMappingList.bdms_by_instance_uuid(
                cctx, cell_uuids)
        for uuid in cell_uuids:
            found[uuid] = [
                {'volume_id': bdm.volume_id,
                 'delete_on_termination': bdm.delete_on_termination}
                for bdm in bdms.get(uuid, ())]
    return found


def metadata(driver, ctx, uuids, system=False):
    """The (system) metadata rows of some instances, as plain dicts.

    The same query as Nova's manual join of ``metadata`` or
    ``system_metadata`` (deleted rows included where Nova's are), only
    without building an ORM object per row.

    :returns: ``{uuid: [{'key', 'value', 'deleted'}]}``.
    """
    model = (models.InstanceSystemMetadata if system
             else models.InstanceMetadata)
    by_uuid = collections.defaultdict(list)
    if not uuids:
        return by_uuid
    with reading(driver, ctx) as ictx:
        query = main_db_api.model_query(
            ictx, model, read_deleted='yes' if system else None
        ).filter(model.instance_uuid.in_(uuids)).with_entities(
            model.instance_uuid, model.key, model.value, model.deleted)
        for uuid, key, value, deleted in query:
            by_uuid[uuid].append(
                {'key': key, 'value': value, 'deleted': deleted})
    return by_uuid
