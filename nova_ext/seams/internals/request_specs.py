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
"""``nova.objects.request_spec``: RequestSpecs as Nova stores them.

Nova stores a RequestSpec in the API database's ``request_specs`` table,
the whole object serialised (``obj_to_primitive``, as JSON) in its
``spec`` column, and builds it again from there
(``RequestSpec._from_db_object``). The server list reads two of its fields;
nova_ext reads them from the object Nova's loader makes of the stored
JSON (``obj_from_primitive``), without the rest of the build (the group
read again, the fields not stored).

Each read of the table is one statement in one round trip, on a
connection of nova_ext's own to the database of the engine Nova's reads
of the API database use (``nova_ext.direct_reads``), where a transaction
of Nova's costs three. The functions take the request's context, as
Nova's objects do; the read does not depend on it.

The contract test is
``nova_ext.tests.unit.seams.test_internals_request_specs``.
"""


import functools

from nova.db.api import models as api_models
from nova import objects
from oslo_serialization import jsonutils
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

from nova_ext import direct_reads
from nova_ext.seams import internals
from nova_ext.seams.internals import api_db

POINT = 'the RequestSpecs Nova stores (request_specs.spec)'


def _check():
    internals.check(POINT)


def _digest(dialect, table):
    """The database's SHA-256 of each row's uuid and stored spec, or None.

    MySQL and MariaDB (``SHA2``; NULL where the server was built without
    it), PostgreSQL 11 or later (``sha256``); None on SQLite. The uuid is
    digested with the text, so that the digests of a page's rows, combined
    (:func:`combined`), tell which server holds which text.
    """
    if dialect in ('mysql', 'mariadb'):
        return sa.func.sha2(sa.func.concat(table.c.instance_uuid,
                                           table.c.spec), 256)
    if dialect == 'postgresql':
        return sa.func.encode(sa.func.sha256(sa.func.convert_to(
            table.c.instance_uuid + table.c.spec, 'UTF8')), 'hex')
    return None


_SPECS = api_models.RequestSpec.__table__


def _of(size):
    """Where a row is of the instances of :func:`_asked`'s ``size``."""
    return direct_reads.in_list(_SPECS.c.instance_uuid, size, 'u')


def _asked(instance_uuids):
    """``(size, params)`` of the instances' IN list (``direct_reads``)."""
    return direct_reads.padded(instance_uuids, 'u')


@functools.lru_cache(maxsize=None)
def _combined_query(dialect, size):
    """The statement of :func:`combined`, or None where there is none.

    MySQL and MariaDB only: each half of the 128 first bits of each row's
    digest, XORed over the rows (``BIT_XOR``), with the count of rows and
    of digests. The digests are made once, in a derived table its LIMIT
    keeps the server from merging into the outer query.

    :param size: the size of the IN list of the instances' uuids, whose
        values :func:`_asked` gives.
    """
    if dialect not in ('mysql', 'mariadb'):
        return None
    digests = sa.select(_digest(dialect, _SPECS).label('d')).where(
        _of(size)).limit(2 ** 64 - 1).subquery()

    def half(start):
        return sa.func.bit_xor(sa.cast(sa.func.conv(
            sa.func.substr(digests.c.d, start, 16), 16, 10),
            mysql.BIGINT(unsigned=True)))
    return sa.select(sa.func.count(), sa.func.count(digests.c.d),
                     half(1), half(17))


def combine(digests):
    """What :func:`combined` answers for rows of these digests, or None.

    :param digests: ``[(instance uuid, digest)]``, as :func:`digests`
        reads them; None where one is None (no SHA2).
    """
    first = second = 0
    for _uuid, digest in digests:
        if digest is None:
            return None
        first ^= int(digest[:16], 16)
        second ^= int(digest[16:32], 16)
    return len(digests), first, second


def _combined(instance_uuids):
    engine = api_db.engine()
    size, params = _asked(instance_uuids)
    statement = _combined_query(engine.dialect.name, size)
    if statement is None:
        return None
    if not size:
        return 0, 0, 0
    rows, digested, first, second = direct_reads.first(
        engine, statement, params)
    if rows != digested:
        return None
    return rows, int(first or 0), int(second or 0)


def combined(context, instance_uuids):
    """The digests of the servers' stored specs, combined, or None.

    One row read instead of one per server: equal to :func:`combine` of
    what :func:`digests` reads, as long as no spec of these servers
    changed (up to a chance of 2**-128). None where the database cannot
    compute it (but MySQL and MariaDB) or a digest is NULL.

    :raises UnsupportedNovaVersion: as :func:`stored`.
    """
    _check()
    return _combined(instance_uuids)


@functools.lru_cache(maxsize=None)
def _read_query(dialect, names, size):
    """The statement of :func:`_read`, or None where there is none."""
    digest = _digest(dialect, _SPECS)
    if digest is None and 'digest' in names:
        return None
    columns = {'spec': _SPECS.c.spec, 'digest': digest}
    return sa.select(_SPECS.c.instance_uuid,
                     *[columns[n] for n in names]).where(_of(size))


def _read(instance_uuids, names):
    """The rows of ``names`` of the instances' specs, or None.

    In one round trip (``direct_reads``), on the engine Nova's reads of
    the API database use.
    """
    engine = api_db.engine()
    size, params = _asked(instance_uuids)
    statement = _read_query(engine.dialect.name, names, size)
    if statement is None:
        return None
    if not size:
        return []
    return direct_reads.rows(engine, statement, params)


def stored(context, instance_uuids):
    """``[(instance uuid, stored spec)]`` of the instances that have one.

    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    _check()
    return _read(instance_uuids, ('spec',))


def digests(context, instance_uuids):
    """``[(instance uuid, digest of its stored spec)]``, or None.

    The digest is the database's SHA-256 of the uuid and stored text,
    which changes whenever the text does, or None where the server cannot
    compute it;
    the list is None where the database has no such function (SQLite):
    read :func:`stored` then.

    :raises UnsupportedNovaVersion: as :func:`stored`.
    """
    _check()
    return _read(instance_uuids, ('digest',))


def stored_with_digests(context, instance_uuids):
    """``[(instance uuid, stored spec, its digest)]``, as :func:`digests`.

    :raises UnsupportedNovaVersion: as :func:`stored`.
    """
    _check()
    return _read(instance_uuids, ('spec', 'digest'))


def decode(spec):
    """``(availability_zone, scheduler_hints)`` of a stored spec, or None.

    The values the RequestSpec Nova builds from ``spec`` holds, as Nova's
    loader makes them, or None when that object would hold something else:
    a spec with a server group (Nova reads the group again, and drops the
    ``group`` hint if it is gone) or without either field.

    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    :raises Exception: what Nova's loader raises on a spec it cannot load
        (a version it does not know, a field of the wrong type), on which
        Nova's list fails.
    """
    _check()
    loaded = objects.RequestSpec.obj_from_primitive(jsonutils.loads(spec))
    if (('instance_group' in loaded and loaded.instance_group) or
            'availability_zone' not in loaded or
            'scheduler_hints' not in loaded):
        return None
    return loaded.availability_zone, loaded.scheduler_hints
