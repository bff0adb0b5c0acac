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
"""Connections to the instance index database.

The index is queried with Nova's own database API: a request context whose
database connection is the index instead of a cell. Nova's query code then
runs unchanged over the rows of every cell at once.
"""

import math
import os
import threading

from nova import context as nova_context
from oslo_db.sqlalchemy import enginefacade
import sqlalchemy as sa

#: The cell uuid a context targeted at the index carries. It is no cell's
#: uuid, so nothing can mistake the index for a cell.
INDEX_CELL_UUID = '00000000-0000-0000-0000-00000000e1de'

_LOCK = threading.Lock()
_MANAGERS = {}


def connection_url(conf):
    url = conf.nova_ext_index.connection
    if url:
        return url
    path = os.path.join(conf.state_path, 'nova_ext_index.sqlite')
    return 'sqlite:///%s' % path


def _sqlite_pragmas(dbapi_connection, connection_record):
    # nova-api reads while the indexer writes: WAL lets readers go on during
    # a write, and busy_timeout makes writers queue instead of failing.
    cursor = dbapi_connection.cursor()
    cursor.execute('PRAGMA busy_timeout = 10000')
    cursor.execute('PRAGMA journal_mode = WAL')
    cursor.close()


def _connect_timeout(url, timeout):
    seconds = max(1, int(math.ceil(timeout)))
    if url.startswith(('mysql', 'postgresql')):
        return 'connect_timeout=%d' % seconds
    return ''


def get_context_manager(conf):
    """The enginefacade transaction context of the index, one per URL."""
    url = connection_url(conf)
    with _LOCK:
        manager = _MANAGERS.get(url)
        if manager is None:
            manager = enginefacade.transaction_context()
            # nova-api must learn at once that the index is unreachable and
            # answer from Nova's path: no connection retries at start-up
            # (oslo.db's default waits 100 s), a bounded connect.
            manager.configure(connection=url, max_retries=0,
                              connection_parameters=_connect_timeout(
                                  url, conf.nova_ext_index.query_timeout))
            engine = manager.writer.get_engine()
            if (engine.dialect.name == 'sqlite' and
                    engine.url.database not in (None, '', ':memory:')):
                sa.event.listen(engine, 'connect', _sqlite_pragmas)
                # oslo.db opened a connection to test the URL; drop it so
                # every connection in use has the pragmas.
                engine.dispose()
            _MANAGERS[url] = manager
        return manager


def get_engine(conf):
    return get_context_manager(conf).writer.get_engine()


def target(ctx, conf):
    """A copy of ``ctx`` whose database is the index.

    Like ``nova.context.target_cell``, the copy is sanitized (no transaction
    or cell targeting of the caller leaks into it).
    """
    cctxt = nova_context.RequestContext.from_dict(ctx.to_dict())
    cctxt.db_connection = get_context_manager(conf)
    cctxt.mq_connection = None
    cctxt.cell_uuid = INDEX_CELL_UUID
    return cctxt


def reset():
    """Forget every engine (tests, and processes that fork)."""
    with _LOCK:
        for manager in _MANAGERS.values():
            try:
                manager.writer.get_engine().dispose()
            except Exception:  # noqa: disposal is best effort
                pass
        _MANAGERS.clear()
