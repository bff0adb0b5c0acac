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
"""Nova's API database: the transaction context of its objects.

Nova's objects reach the API database through one module attribute,
``nova.db.api.api.context_manager`` (an oslo.db enginefacade transaction
context), whose ``reader`` and ``writer`` decorate the functions that read
or write it: inside, ``context.session`` is a session of the API database.
nova_ext's own queries of the API database are decorated the same way, so
that they run on Nova's engine, configured from ``[api_database]``, and on
whatever Nova's test fixtures put in its place.

The contract test is
``nova_ext.tests.unit.seams.test_internals_api_db``.
"""

import functools

from nova.db.api import api as api_db_api
from nova.db.api import models as api_models
import sqlalchemy as sa

from nova_ext import direct_reads
from nova_ext.seams import internals

POINT = "nova_ext's queries of Nova's API database"


def _check():
    internals.check(POINT)


def _decorate(mode, fn):
    decorated = mode(fn)

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        _check()
        return decorated(*args, **kwargs)
    return checked


def reader(fn):
    """``fn(context, ...)`` in a reader transaction of the API database.

    As ``@nova.db.api.api.context_manager.reader``: within, the request
    context's ``session`` reads the API database.

    :raises UnsupportedNovaVersion: when called on a Nova nova_ext was not
        tested with; ``fn`` is not called.
    """
    return _decorate(api_db_api.context_manager.reader, fn)


def writer(fn):
    """``fn(context, ...)`` in a writer transaction of the API database.

    As ``@nova.db.api.api.context_manager.writer``; committed when the
    outermost such function returns.

    :raises UnsupportedNovaVersion: as :func:`reader`.
    """
    return _decorate(api_db_api.context_manager.writer, fn)


def engine():
    """The engine Nova's reads and writes of the API database use.

    A reader transaction of ``context_manager`` (which Nova's objects
    read the API database in) runs on its writer engine: Nova's
    ``nova.db.api.api.get_engine()``.

    :raises UnsupportedNovaVersion: as :func:`reader`.
    """
    _check()
    return api_db_api.get_engine()


_MAPPINGS = api_models.InstanceMapping.__table__
_CELLS = api_models.CellMapping.__table__


@functools.lru_cache(maxsize=None)
def _cells_of_query(size):
    return sa.select(_MAPPINGS.c.instance_uuid, _CELLS.c.uuid).select_from(
        _MAPPINGS.outerjoin(_CELLS, _MAPPINGS.c.cell_id == _CELLS.c.id)
    ).where(direct_reads.in_list(_MAPPINGS.c.instance_uuid, size, 'u'))


def cells_of(instance_uuids):
    """``{instance uuid: cell uuid, or None for a build request}``.

    Of the instances that have an instance mapping: two columns of a
    join, where InstanceMappingList would build a mapping and a cell
    object per instance; in one statement and one round trip
    (``nova_ext.direct_reads``) on the engine of :func:`engine`.

    :raises UnsupportedNovaVersion: as :func:`reader`.
    """
    size, params = direct_reads.padded(instance_uuids, 'u')
    if not size:
        _check()
        return {}
    return dict(direct_reads.rows(engine(), _cells_of_query(size), params))
