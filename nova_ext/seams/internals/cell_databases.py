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
"""Where Nova reads a cell's database, and whether it has connected yet.

Nova makes the database API of a cell with
``nova.db.main.api.create_context_manager(cell.database_connection)``: an
oslo.db enginefacade configured with every option of ``[database]`` but
the connection (``_get_db_conf``). Its reads go to ``[database]
slave_connection`` where one is set (the reader engine), else to the
cell's own URL, with ``[database] connection_parameters`` appended
(oslo.db's ``create_engine``). The engines start at the first query, and
oslo.db then tests the connection, again and again, ``[database]
max_retries`` times ``retry_interval`` seconds apart (100 s by default),
under a lock of the context manager that every other query of the cell in
the process waits for.

The contract test is
``nova_ext.tests.unit.seams.test_internals_cell_databases``.
"""

from nova import conf as nova_conf
import sqlalchemy as sa

from nova_ext.seams import internals

CONF = nova_conf.CONF

POINT = "Nova's database API of a cell (create_context_manager)"


def started_reader(context_manager):
    """The engine Nova's reads of a cell use, if it has started; else None.

    :param context_manager: the cell's, as ``nova.db.main.api.
        get_context_manager`` gives it for a context targeted at the cell.
    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    internals.check(POINT)
    if not context_manager.is_started:
        return None
    return context_manager.reader.get_engine()


def reader_url(cell_mapping):
    """The URL of the database Nova's reads of the cell go to.

    As Nova's engine of the cell will connect to it, before it has.

    :returns: a SQLAlchemy URL; None for a database that is not a server
        (SQLite: a database in memory is only reached through the engine
        that made it), or a ``database_connection`` that is no URL (Nova's
        test harness names its cells' databases by their uuids).
    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    internals.check(POINT)
    try:
        url = _configured_reader(cell_mapping)
    except sa.exc.ArgumentError:
        return None
    if url.get_backend_name() == 'sqlite':
        return None
    return url


def _configured_reader(cell_mapping):
    url = sa.engine.make_url(CONF.database.slave_connection or
                             cell_mapping.database_connection)
    if CONF.database.connection_parameters:
        url = url.update_query_string(CONF.database.connection_parameters,
                                      append=True)
    return url
