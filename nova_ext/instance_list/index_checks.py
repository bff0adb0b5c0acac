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
"""Which list requests the index driver hands to Nova before it queries.

Requests whose exact answer the index cannot give: those that could need
deleted instances the index purged, regular expression filters on a
different kind of database than Nova's, and those Nova orders by each
cell's own instance ids.
"""

import datetime

from nova.db.main import models
from oslo_utils import timeutils
import sqlalchemy as sa

from nova_ext import conf as ext_conf
from nova_ext.index import db
from nova_ext.instance_list import base


def tombstones(conf, filters):
    """Hand to Nova the queries that could need purged tombstones."""
    days = conf.nova_ext_index.deleted_retention
    if not days:
        return
    if filters.get('deleted') or 'changes-before' in filters:
        raise base.Unservable('deleted instances older than %d days are '
                              'not in the index' % days)
    since = filters.get('changes-since')
    if since is not None:
        now = timeutils.utcnow(with_timezone=since.tzinfo is not None)
        if since < now - datetime.timedelta(days=days):
            raise base.Unservable('changes-since is older than the '
                                  'index keeps deleted instances')


#: Filters Nova's query handles other than by a regular expression (see
#: instance_get_all_by_filters_sort): exact matches and special keys.
_NOT_REGEX = frozenset([
    'project_id', 'user_id', 'image_ref', 'vm_state', 'instance_type_id',
    'uuid', 'metadata', 'host', 'task_state', 'system_metadata', 'locked',
    'hidden', 'deleted', 'cleaned', 'changes-since', 'changes-before',
    'tags', 'tags-any', 'not-tags', 'not-tags-any'])


def _backend(url):
    try:
        return sa.engine.make_url(url).get_backend_name()
    except (sa.exc.ArgumentError, ValueError):
        return None


def regex_dialect(conf, filters):
    """Hand to Nova the regex filters the index cannot run as Nova would.

    Nova picks its regular expression operator from ``[database]
    connection`` (``REGEXP`` for MySQL and SQLite, ``~`` for PostgreSQL),
    not from the database it queries, and what a pattern matches depends on
    that database too: MySQL compares without case under Nova's collation,
    SQLite runs Python's ``re``, PostgreSQL POSIX expressions. Only an
    index on the same kind of database as that option names matches as
    Nova does.
    """
    regex = [key for key in filters if key not in _NOT_REGEX and
             isinstance(getattr(models.Instance, key, None),
                        sa.orm.attributes.InstrumentedAttribute)]
    if not regex:
        return
    nova_kind = _backend(ext_conf.CONF.database.connection or '')
    index_kind = _backend(db.connection_url(conf))
    if nova_kind is None or nova_kind != index_kind:
        raise base.Unservable(
            'regular expression filters %s: Nova matches them on %s, the '
            'index is on %s' % (sorted(regex), nova_kind, index_kind))


def cell_local_order(sort_keys):
    """Hand to Nova the lists it orders by each cell's instance ids.

    A request whose every sort key Nova ignores (before microversion 2.75:
    ``id``, ``deleted``, ``locked`` before 2.73, and others) reaches Nova's
    lister without keys, which then orders by ``created_at`` and the
    cell-local ``id``, both descending, and last by ``uuid``. Two servers
    of two cells with the same ``created_at`` and the same id are in uuid
    order there; the index id holds the cell below the cell-local id
    (``nova_ext.index.ids``) and orders them by cell. A boot of many
    servers at once gives them the same second, and cells number their
    rows alike.
    """
    if not sort_keys:
        raise base.Unservable("Nova orders this list by each cell's own "
                              'instance ids (its sort keys are ignored)')
