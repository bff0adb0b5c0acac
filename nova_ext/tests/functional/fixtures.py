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
"""Attach nova_ext to Nova's functional harness as an operator would.

Every seam is attached through the same configuration an operator writes:
an api-paste.ini made from Nova's own by nova_ext.api.paste_config,
``[oslo_messaging_notifications]driver``, and
``[filter_scheduler]available_filters``. Where Nova's harness replaces a
production object before a test can configure it (it initialises RPC and
swaps in a fake notifier in TestCase.setUp), the fixture re-runs Nova's own
``rpc.init`` with the operator configuration.
"""

import collections
import contextlib
import datetime
import os
import sqlite3
import sys
import threading
import time

import fixtures
from nova import rpc
from nova.scheduler import request_filter
from oslo_config import cfg
from oslo_utils import timeutils
import sqlalchemy as sa

from nova_ext.api import paste_config
from nova_ext.index import db as index_db
from nova_ext.index.marks import pending as index_pending
from nova_ext.index.marks import process as index_process
from nova_ext.index.upkeep import migration as index_migration
from nova_ext.instance_list import page_cache
from nova_ext.instance_list import render
from nova_ext.instance_list.render import detail_bodies
from nova_ext.instance_list.render import page_bodies
from nova_ext.instance_list.render import render_cache
from nova_ext.notifications import dispatcher
from nova_ext.seams import api as api_entry_point

CONF = cfg.CONF

API = 'api'
NOTIFICATIONS = 'notifications'
SCHEDULER = 'scheduler'
ALL_SEAMS = (API, NOTIFICATIONS, SCHEDULER)

NOVA_FILTERS = 'nova.scheduler.filters.all_filters'
ATTACH = 'nova_ext.seams.scheduler.attach'


def nova_api_paste_ini():
    """Path of the api-paste.ini that the installed Nova ships."""
    candidates = [CONF.wsgi.api_paste_config,
                  os.path.join(sys.prefix, 'etc', 'nova', 'api-paste.ini')]
    for path in candidates:
        if path and os.path.isabs(path) and os.path.exists(path):
            return path
    found = CONF.find_file('api-paste.ini')
    if not found:
        raise RuntimeError('cannot find the api-paste.ini of the installed '
                           'nova; looked at %s' % candidates)
    return found


def wsgi_layers(app, seen=None):
    """Types of every WSGI layer reachable from a paste application."""
    seen = set() if seen is None else seen
    if app is None or id(app) in seen:
        return set()
    seen.add(id(app))
    found = {type(app)}
    # paste's URLMap keeps ((domain, path), app) pairs.
    children = [a for _, a in getattr(app, 'applications', [])]
    for attr in ('application', 'app', '_app', 'chains'):
        child = getattr(app, attr, None)
        if isinstance(child, dict):
            children.extend(child.values())
        elif child is not app:
            children.append(child)
    for child in children:
        found |= wsgi_layers(child, seen)
    return found


class Tee(object):
    """Sends each notification to several notifiers (real and Nova's fake).

    Nova's functional helpers wait on the fake versioned notifier, so it has
    to keep receiving; the real one runs the configured drivers.
    """

    def __init__(self, *notifiers):
        self._notifiers = notifiers

    def prepare(self, **kwargs):
        return Tee(*(n.prepare(**kwargs) for n in self._notifiers))

    def is_enabled(self):
        return any(n.is_enabled() for n in self._notifiers)

    def __getattr__(self, name):
        methods = [getattr(n, name) for n in self._notifiers]

        def call(*args, **kwargs):
            for method in methods:
                method(*args, **kwargs)
        return call


class NovaExtFixture(fixtures.Fixture):
    """nova_ext attached to the current Nova functional test.

    :param test: the nova.test.TestCase (for flags and stub_out).
    :param seams: which seams to attach (subset of ALL_SEAMS).
    :param options: nova_ext options, ``{group: {option: value}}``.
    """

    def __init__(self, test, seams=ALL_SEAMS, options=None):
        super().__init__()
        self.test = test
        self.seams = tuple(seams)
        self.options = options or {}
        self.paste_ini = None

    def _setUp(self):
        for group, values in self.options.items():
            self.test.flags(group=group, **values)
        self.addCleanup(dispatcher.reset)
        # Loading the paste filter may route Nova's instance list through
        # nova_ext; every test starts and ends with Nova's own.
        api_entry_point.detach_instance_list()
        self.addCleanup(api_entry_point.detach_instance_list)
        # Loading the servers-list handler installs what rendering needs.
        self.addCleanup(render.detach)
        self._write_api_paste(API in self.seams)
        if SCHEDULER in self.seams:
            self._attach_scheduler()
        if NOTIFICATIONS in self.seams:
            self._attach_notifications()

    def _write_api_paste(self, attach):
        # Nova's harness expects api-paste.ini in a source tree; a Nova
        # installed from PyPI has it under sys.prefix, so always point to
        # a copy, with or without nova_ext.
        with open(nova_api_paste_ini()) as f:
            text = f.read()
        if attach:
            text = paste_config.enable(text)
        tmp = self.useFixture(fixtures.TempDir()).path
        self.paste_ini = os.path.join(tmp, 'api-paste.ini')
        with open(self.paste_ini, 'w') as f:
            f.write(text)
        self.test.flags(api_paste_config=self.paste_ini, group='wsgi')

    def _attach_scheduler(self):
        filters = request_filter.ALL_REQUEST_FILTERS
        original = list(filters)
        self.addCleanup(filters.__setitem__, slice(None), original)
        self.test.flags(available_filters=[NOVA_FILTERS, ATTACH],
                        group='filter_scheduler')

    def _attach_notifications(self):
        self.test.flags(driver=['messagingv2', 'nova_ext'],
                        group='oslo_messaging_notifications')
        names = ('TRANSPORT', 'NOTIFICATION_TRANSPORT', 'LEGACY_NOTIFIER',
                 'NOTIFIER')
        saved = {name: getattr(rpc, name) for name in names}
        dispatcher.reset()
        rpc.init(CONF)
        created = {name: getattr(rpc, name) for name in names}
        for name, value in saved.items():
            setattr(rpc, name, value)
        self.addCleanup(created['NOTIFICATION_TRANSPORT'].cleanup)
        self.addCleanup(created['TRANSPORT'].cleanup)
        self.test.stub_out('nova.rpc.NOTIFIER',
                           Tee(created['NOTIFIER'], saved['NOTIFIER']))
        if CONF.notifications.notification_format == 'both':
            self.test.stub_out(
                'nova.rpc.LEGACY_NOTIFIER',
                Tee(created['LEGACY_NOTIFIER'], saved['LEGACY_NOTIFIER']))


class IndexFixture(fixtures.Fixture):
    """A fresh instance index database (SQLite file) with its schema.

    :param connection: an SQLAlchemy URL to use instead (an empty database
        on a real server, for the SQL backend tests).
    """

    def __init__(self, test, connection=None):
        super().__init__()
        self.test = test
        self.connection = connection

    def _setUp(self):
        copied = self.connection is None
        if copied:
            tmp = self.useFixture(fixtures.TempDir()).path
            path = os.path.join(tmp, 'nova_ext_index.sqlite')
            self.connection = 'sqlite:///%s' % path
            _copy_migrated_sqlite(self.test, path)
        self.test.flags(connection=self.connection, group='nova_ext_index')
        index_db.reset()
        self.addCleanup(index_db.reset)
        self.addCleanup(render_cache.reset)
        self.addCleanup(page_cache.reset)
        self.addCleanup(page_bodies.reset)
        self.addCleanup(detail_bodies.reset)
        # Runs before index_db.reset: the worker uses the engine.
        self.addCleanup(index_process.reset)
        if not copied:
            index_migration.db_sync(CONF)

    @property
    def engine(self):
        return index_db.get_engine(CONF)

    def wait_fresh(self, timeout=20.0):
        """Wait until every notification so far is applied to the index."""
        deadline = time.monotonic() + timeout
        dispatcher.get_dispatcher(CONF).drain(timeout)
        while index_pending.count(self.engine):
            if time.monotonic() > deadline:
                raise AssertionError(
                    'index still has %d pending changes after %.0f s'
                    % (index_pending.count(self.engine), timeout))
            time.sleep(0.05)


#: An SQLite index db_sync made in this process, kept in memory: the
#: schema every IndexFixture copies, as Nova's harness caches the schema of
#: its own databases (the migrations themselves: test_index_upgrade).
_MIGRATED = []


def _copy_migrated_sqlite(test, path):
    """Make ``path`` an SQLite index at the newest revision."""
    if not _MIGRATED:
        made = path + '.migrated'
        test.flags(connection='sqlite:///%s' % made, group='nova_ext_index')
        index_db.reset()
        index_migration.db_sync(CONF)
        index_db.reset()
        kept = sqlite3.connect(':memory:', check_same_thread=False)
        with contextlib.closing(sqlite3.connect(made)) as source:
            source.backup(kept)
        _MIGRATED.append(kept)
    # SQLite's backup: a consistent copy of the whole database.
    with contextlib.closing(sqlite3.connect(path)) as copy:
        _MIGRATED[0].backup(copy)


class SkewedClock(fixtures.Fixture):
    """Nova's clock ``seconds`` off (behind when negative), while in use.

    Nova stamps ``updated_at`` (and judges services up) with
    ``timeutils.utcnow``; this process's then runs as the clock of a host
    that is behind or ahead of the others. It still moves.
    """

    def __init__(self, seconds):
        super().__init__()
        self.offset = datetime.timedelta(seconds=seconds)

    def _setUp(self):
        real, offset = timeutils.utcnow, self.offset

        def utcnow(with_timezone=False):
            return real(with_timezone) + offset
        # As timeutils.set_time_override expects of it.
        utcnow.override_time = None
        self.useFixture(fixtures.MonkeyPatch(
            'oslo_utils.timeutils.utcnow', utcnow))


class Stalls(fixtures.Fixture):
    """How long this process's threads could not run, while in use.

    The harness runs the tests and every service in one process. Under
    eventlet, a greenthread that computes for seconds (Nova's own list,
    its statements compiled anew, on a machine running other suites) holds
    every other one: the holders' heartbeats and this process's reads of
    the holders table (``witness``) wait with it, and the lists that
    follow go to Nova for the holders' silence, as they must. A thread
    that ticks every :data:`TICK` records how late each tick was.
    """

    TICK = 0.05
    #: Lateness of one tick below which it is not recorded: a switch.
    LATE = 0.01

    def _setUp(self):
        # (monotonic time of the late tick, seconds late)
        self._late = collections.deque(maxlen=10000)
        self._last = time.monotonic()
        stop = threading.Event()
        thread = threading.Thread(target=self._run, args=(stop,),
                                  daemon=True, name='nova-ext-test-stalls')
        thread.start()
        self.addCleanup(thread.join, 5)
        self.addCleanup(stop.set)

    def _run(self, stop):
        while not stop.wait(self.TICK):
            now = time.monotonic()
            late = now - self._last - self.TICK
            if late > self.LATE:
                self._late.append((now, late))
            self._last = now

    def since(self, moment):
        """Seconds the ticks were late in all, from ``moment`` on.

        With the tick that is late now: the thread that asks may be the
        one that held the others, and they have not run since.
        """
        now = time.monotonic()
        gaps = [(when, late) for when, late in list(self._late)
                if when > moment]
        overdue = now - self._last - self.TICK
        if overdue > self.LATE:
            gaps.append((now, overdue))
        return sum(min(late, when - moment) for when, late in gaps)


class NovaWrites(fixtures.Fixture):
    """Counts the writes Nova's databases see, on every engine but one.

    A statement that writes (INSERT, UPDATE, DELETE) and the end of the
    transaction it ran in each count one. Two answers of Nova's own that
    agree prove its state was the same between them only while this count
    did not move: a change made and undone in between (a build request
    gone and its instance's first update not yet made) leaves both the
    same.

    :param skip_database: the database (a file's path) whose engine is not
        counted: the index's, which list requests themselves write.
    """

    _WRITES = ('INSERT', 'UPDATE', 'DELETE', 'REPLACE')
    _DIRTY = 'nova_ext_tests_wrote'

    def __init__(self, skip_database):
        super().__init__()
        self.skip_database = skip_database
        self.count = 0

    def _setUp(self):
        listeners = (('before_cursor_execute', self._execute),
                     ('commit', self._end), ('rollback', self._end))
        for name, listener in listeners:
            sa.event.listen(sa.engine.Engine, name, listener)
            self.addCleanup(sa.event.remove, sa.engine.Engine, name,
                            listener)

    def _counted(self, conn):
        return conn.engine.url.database != self.skip_database

    def _execute(self, conn, cursor, statement, *args):
        verb = statement.lstrip()[:7].upper()
        if verb.startswith(self._WRITES) and self._counted(conn):
            conn.info[self._DIRTY] = True
            self.count += 1

    def _end(self, conn):
        if conn.info.pop(self._DIRTY, False):
            self.count += 1


class MarkWrites(fixtures.Fixture):
    """Counts the writes of marks to the index, and those that failed.

    A hold is the mark a Nova transaction writes on its own thread before
    it commits (``capture.hold``, not cooperatively): a hold that fails has
    waited for the index, and Nova's write with it. Counted by
    ``(phase(), hold or not, failed or not)``.

    :param phase: what the test is doing, as a hashable value.
    """

    def __init__(self, phase):
        super().__init__()
        self.phase = phase
        self.counts = collections.Counter()

    def _setUp(self):
        mark = index_pending.mark

        def counted(engine, events, holds=(), releases=(), timeout=None,
                    cooperative=True, told=()):
            key = (self.phase(), not cooperative)
            try:
                number = mark(engine, events, holds, releases,
                              timeout=timeout, cooperative=cooperative,
                              told=told)
            except Exception:
                self.counts[key + (True,)] += 1
                raise
            self.counts[key + (False,)] += 1
            return number
        self.useFixture(fixtures.MonkeyPatch(
            index_pending.__name__ + '.mark', counted))

    def failed_holds(self, phase):
        return self.counts[(phase, True, True)]

    def commits(self, phase):
        """Marks recorded by the marker, not holds."""
        return self.counts[(phase, False, False)]


def first_difference(want, got, path=''):
    """The first place two JSON documents differ (``want`` is Nova's).

    For the failure messages of the parity tests and of ``nova-ext-bench
    list``, about two bodies whose bytes differ; key order counts.
    """
    if type(want) is not type(got):
        return '%s: Nova %r, index %r' % (path or '/', want, got)
    if isinstance(want, dict):
        for key in list(want) + [k for k in got if k not in want]:
            if key not in want or key not in got:
                return '%s/%s: only in %s' % (
                    path, key, 'Nova' if key in want else 'the index')
            found = first_difference(want[key], got[key],
                                     '%s/%s' % (path, key))
            if found:
                return found
        if list(want) != list(got):
            return '%s: key order %s vs %s' % (path, list(want), list(got))
        return None
    if isinstance(want, list):
        for i, (w, g) in enumerate(zip(want, got)):
            found = first_difference(w, g, '%s[%d]' % (path, i))
            if found:
                return found
        if len(want) != len(got):
            return '%s: %d items in Nova, %d in the index' % (
                path, len(want), len(got))
        return None
    if want != got:
        return '%s: Nova %r, index %r' % (path or '/', want, got)
    return 'same JSON, different bytes' if not path else None
