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
"""List counters of nova-api processes, kept in the index database.

Each nova-api process that lists through the index writes its counters
(served, handed to Nova, unavailable, latched, ...) within ten seconds of
a list request, at most every ten seconds, so that ``nova-ext-manage index
status`` can show one cloud-wide picture without a metrics system. With
them, what decides that process's choice and only it knows: the changes it
could not record in the index (``unrecorded``, see
``nova_ext.index.upkeep.rules``). Rows of processes gone quiet for a day are
dropped.
"""

import json
import os
import socket
import time

import sqlalchemy as sa

from nova_ext.index import db
from nova_ext.index import schema

COUNTERS = schema.API_COUNTERS


#: Rows older than this are forgotten.
EXPIRY = 86400.0
_STARTED = time.time()


#: The key of the counts document that holds ``unrecorded``.
_UNRECORDED = 'unrecorded'
#: The key of the counts document that holds the counts by reason.
_REASONS = 'reasons'
#: The key of the counts document that holds the page cache's lookups.
_PAGES = 'pages'
#: The key of the counts document that holds the holders not vouching.
_SILENT = 'silent'


def publish(engine, driver, counts, now=None, timeout=None,
            unrecorded=None, unrecorded_lag=None, pages=None, silent=None):
    """Record this process's counters.

    :param timeout: seconds to wait for the index's write lock
        (``db.begin_write``).
    :param unrecorded: how many changes this process could not record.
    :param unrecorded_lag: the age of the oldest, in seconds.
    :param pages: the page cache's lookups by outcome, where it is on
        (``page_cache.PageCache.outcomes``).
    :param silent: ``{'holders': names, 'window': seconds}``: the other
        holders of marks that have not vouched in the last ``window``
        seconds by this process's reads, None for names if it has not
        read them lately (``witness.Witness.silent``).
    """
    now = time.time() if now is None else now
    host, pid = socket.gethostname(), os.getpid()
    # In the counts document: the table keeps its schema.
    document = dict(counts)
    if unrecorded is not None:
        document[_UNRECORDED] = {'count': unrecorded, 'lag': unrecorded_lag}
    if pages is not None:
        document[_PAGES] = pages
    if silent is not None:
        document[_SILENT] = silent
    row = {'driver': driver, 'updated_at': now, 'started_at': _STARTED,
           'counts': json.dumps(document, sort_keys=True)}
    with db.begin_write(engine, timeout) as conn:
        updated = conn.execute(sa.update(COUNTERS).where(
            COUNTERS.c.host == host, COUNTERS.c.pid == pid).values(**row))
        if not updated.rowcount:
            conn.execute(sa.insert(COUNTERS).values(host=host, pid=pid, **row))
        conn.execute(sa.delete(COUNTERS).where(
            COUNTERS.c.updated_at < now - EXPIRY))


def collect(engine):
    """Every process's latest counters, newest first.

    Each row has its ``counts``, its ``unrecorded`` and its
    ``unrecorded_lag`` (None where the process did not publish them), its
    ``reasons``: ``{outcome: {reason kind: count}}`` of the lists it
    handed to Nova (``serving.Stats``), and its ``pages``: the page
    cache's lookups by outcome, None where it is off, and its
    ``silent``: ``{'holders': [name] or None, 'window': seconds}``, None
    where the process did not publish it.
    """
    with engine.connect() as conn:
        rows = conn.execute(sa.select(COUNTERS).order_by(
            COUNTERS.c.updated_at.desc()))
        found = []
        for row in rows:
            counts = json.loads(row.counts)
            unrecorded = counts.pop(_UNRECORDED, None) or {}
            reasons = counts.pop(_REASONS, None) or {}
            pages = counts.pop(_PAGES, None)
            silent = counts.pop(_SILENT, None)
            found.append(dict(row._mapping, counts=counts, reasons=reasons,
                              pages=pages, silent=silent,
                              unrecorded=unrecorded.get('count'),
                              unrecorded_lag=unrecorded.get('lag')))
        return found
