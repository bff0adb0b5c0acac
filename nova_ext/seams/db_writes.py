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
"""Every Nova process that writes: capture of its instance changes.

Nova writes its databases through oslo.db's enginefacade, whose sessions
are SQLAlchemy ORM sessions. With ``[nova_ext_index]capture`` set,
:func:`attach` (called when the ``nova_ext`` notification driver is
built, in every process at ``rpc.init``) listens to the events of every
session of the process:

* ``before_flush``: the instances of the tracked tables' rows an ORM
  flush is about to write are marked in the index and held;
* ``after_flush``: those it wrote that were not foreseen (a child whose
  instance uuid the flush itself filled in), the same;
* ``do_orm_execute``: the INSERT, UPDATE and DELETE statements run through
  a session (``Query.update()``, ``Query.delete()``, oslo.db's
  ``soft_delete`` and ``update_on_match``, Nova's tag insert), before they
  run;
* ``after_transaction_end`` of a session's outermost transaction, after
  its commit or rollback: the holds are released and the marks renewed.

It also has the process record what it could not record yet when a Nova
service of it stops (``nova_ext.index.marks.process.record_at_stops``),
before the service starts.

Statements that Nova runs on a bare connection, outside any session, are
not seen: in Nova 34 only ``archive_deleted_rows`` does so on tracked
tables, and it then deletes the archived instances' mappings through a
session, which is seen. nova_ext's own writes of Nova's rows (the
compute-id links) go through a session too, and ``nova-ext-manage db``
attaches capture itself, having no notifier. The contract test
``nova_ext.tests.unit.seams.test_db_writes_contract`` fails when a
Nova writer escapes this. Only on the Nova versions in
``nova_ext.compat.TESTED_NOVA``.
"""

import threading

from oslo_log import log as logging
from sqlalchemy import event
from sqlalchemy import orm

from nova_ext import compat
from nova_ext.index.marks import capture
from nova_ext.index.marks import process
from nova_ext import startup_log

LOG = logging.getLogger(__name__)

POINT = 'nova_ext index change capture'

_LOCK = threading.Lock()
_CONF = None


def _hold_flushed(session, *args):
    _guarded(_hold_flush, session)


def _hold_flush(conf, session):
    capture.hold(conf, session, capture.from_flush(session))


def _do_orm_execute(state):
    if not (state.is_insert or state.is_update or state.is_delete):
        return
    try:
        uuids = capture.from_statement(state)
    except capture.Unknown as e:
        LOG.error('nova_ext index cannot tell which instances a write '
                  'changes (%s): %s; they show in lists after the next '
                  'reconcile pass', e, state.statement)
        return
    _guarded(capture.hold, state.session, uuids)


def _guarded(step, *args):
    if _CONF is None:
        return
    try:
        step(_CONF, *args)
    except Exception:  # noqa: a mark must never fail Nova's write
        LOG.exception('nova_ext index could not mark changed instances')


def _after_transaction_end(session, transaction):
    # A savepoint's end is not the transaction's: its writes stay held
    # with the transaction's. The outermost one ends after its commit or
    # rollback.
    if transaction.parent is None:
        _guarded(capture.release, session)


_LISTENERS = (('before_flush', _hold_flushed),
              ('after_flush', _hold_flushed),
              ('do_orm_execute', _do_orm_execute),
              ('after_transaction_end', _after_transaction_end))


def attach(conf):
    """Install the listeners in this process, once, if capture is on.

    :returns: whether capture is installed.
    """
    global _CONF
    if not conf.nova_ext_index.capture:
        return False
    if not compat.tested(POINT, LOG, 'Nova database writes are not '
                         'captured, and the index learns of changes from '
                         'notifications only'):
        return False
    with _LOCK:
        if _CONF is None:
            for name, listener in _LISTENERS:
                event.listen(orm.Session, name, listener)
            process.record_at_stops(conf)
            # From the notification driver, before the process sets up
            # its logging.
            startup_log.info(LOG, 'nova_ext index change capture attached')
        _CONF = conf
    return True


def detach():
    """Remove the listeners (tests, and a configuration change)."""
    global _CONF
    with _LOCK:
        if _CONF is not None:
            for name, listener in _LISTENERS:
                event.remove(orm.Session, name, listener)
        _CONF = None


def attached():
    return _CONF is not None
