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
"""Whether a cell's database answers, without starting Nova's engine of it.

Nova's engine of a cell starts at its first query in a process, and if the
database does not answer, oslo.db tries again for ``[database]
max_retries`` times ``retry_interval`` seconds (100 s by default), holding
a lock that Nova's own queries of the cell wait for
(``nova_ext.seams.internals.cell_databases``). A process that starts while
a cell's database is down (a nova-api worker uwsgi starts again, an
indexer) would have each of nova_ext's checks begin such a start, and the
lists it hands to Nova wait for nova_ext's start before their own. So a
cell whose engine Nova has not started is asked on a connection of
nova_ext's own to the URL that engine will read, which fails as soon as
the database refuses it; Nova's engine starts when Nova first queries the
cell, or when nova_ext reads it once it answered.
"""

from nova.db.main import api as main_db_api

from nova_ext import direct_reads
from nova_ext.seams.internals import cell_databases


def ask(cctxt, cell_mapping):
    """Ask the cell's database ``SELECT 1``; raise if it does not answer.

    What Nova's list queries of the cell read: its replica, where
    ``[database] slave_connection`` names one.

    :param cctxt: a context targeted at ``cell_mapping``.
    :raises: SQLAlchemy's ``DBAPIError`` (or another error of SQLAlchemy or
        oslo.db) when it does not answer.
    """
    manager = main_db_api.get_context_manager(cctxt)
    engine = cell_databases.started_reader(manager)
    if engine is None:
        _ask_unstarted(manager, cell_mapping)
    else:
        direct_reads.ask(engine)


def before_reads(cctxt, cell_mapping):
    """Raise if the cell does not answer, where Nova has not connected yet.

    Before nova_ext's own reads of the cell through Nova's engine
    (``source``): one round trip more, only until that engine started.
    """
    manager = main_db_api.get_context_manager(cctxt)
    if cell_databases.started_reader(manager) is None:
        _ask_unstarted(manager, cell_mapping)


def _ask_unstarted(manager, cell_mapping):
    url = cell_databases.reader_url(cell_mapping)
    if url is None:
        # SQLite, or a database named but not a URL: only Nova's engine
        # reaches it, started here.
        direct_reads.ask(manager.reader.get_engine())
    else:
        direct_reads.ask_url(url)
