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
"""One applier of pending marks at a time, across processes (SQLite).

The other process is a real one, taking the turn with the same module;
the turn of MySQL and PostgreSQL is tested on real servers in the
functional test ``test_index_turns``.
"""

import subprocess
import sys
import threading

import fixtures
from nova import context as nova_context
import sqlalchemy as sa

from nova_ext.index.apply import refresh
from nova_ext.index.apply import turn
from nova_ext.index.apply import writer
from nova_ext.index.marks import pending
from nova_ext.instance_list import catch_up
from nova_ext.tests.unit.index import base as index_base

#: A process that takes the turn of the index at argv[1], says whether it
#: has it, and holds it until a line comes on its standard input.
_HOLD = '''
import sys
import sqlalchemy as sa
from nova_ext.index.apply import turn
engine = sa.create_engine(sys.argv[1])
with turn.taken(engine, float(sys.argv[2])) as had:
    print('had' if had else 'not had', flush=True)
    sys.stdin.readline()
'''


class OtherProcess(object):
    """Another process holding the turn of the index at ``url``."""

    def __init__(self, test, url, wait=30.0):
        self.proc = subprocess.Popen(
            [sys.executable, '-c', _HOLD, url, str(wait)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        test.addCleanup(self.kill)
        test.assertEqual('had', self.proc.stdout.readline().strip())

    def release(self):
        self.proc.stdin.write('\n')
        self.proc.stdin.flush()
        self.proc.wait(30)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self.proc.stdin.close()
        self.proc.stdout.close()


def had(engine, wait):
    with turn.taken(engine, wait) as had:
        return had


def other_process_had(url, wait):
    """Whether another process has the turn at ``url`` within ``wait``."""
    proc = subprocess.Popen([sys.executable, '-c', _HOLD, url, str(wait)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        answer = proc.stdout.readline().strip()
        proc.communicate('\n', timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    return answer == 'had'


class TurnTests(object):
    """Those of every backend; ``self.engine`` is the index's."""

    def url(self):
        return self.engine.url.render_as_string(hide_password=False)

    def test_another_process_holds_it_until_released(self):
        other = OtherProcess(self, self.url())
        self.assertFalse(had(self.engine, 0.2))
        other.release()
        self.assertTrue(had(self.engine, 5.0))

    def test_a_process_that_dies_holding_it_frees_it(self):
        other = OtherProcess(self, self.url())
        other.kill()
        self.assertTrue(had(self.engine, 5.0))

    def test_a_waiter_has_it_once_the_holder_releases(self):
        other = OtherProcess(self, self.url())
        done = []
        waiter = threading.Thread(
            target=lambda: done.append(had(self.engine, 30.0)))
        waiter.start()
        waiter.join(0.5)
        self.assertEqual([], done)
        other.release()
        waiter.join(30)
        self.assertEqual([True], done)

    def test_a_read_under_it_sees_what_the_last_holder_committed(self):
        other = OtherProcess(self, self.url())
        seen = []

        def wait_and_read():
            with turn.held(self.engine, 30.0) as held:
                with held.reading() as conn:
                    seen.append((held.had, pending.take_on(conn, 10)))
        waiter = threading.Thread(target=wait_and_read)
        waiter.start()
        waiter.join(0.5)
        self.assertEqual([], seen)
        # Committed while the other holds the turn and this one waits.
        pending.mark(self.engine, [('u1', 1.0)])
        marks = pending.take(self.engine, 10)
        self.assertEqual(['u1'], list(marks))
        other.release()
        waiter.join(30)
        self.assertEqual([(True, marks)], seen)

    def test_reading_under_it_keeps_it(self):
        with turn.held(self.engine, 5.0) as held:
            self.assertTrue(held.had)
            with held.reading() as conn:
                self.assertEqual({}, pending.take_on(conn, 10))
            self.assertFalse(other_process_had(self.url(), 0.2))
        self.assertTrue(other_process_had(self.url(), 5.0))

    def test_threads_of_one_process_take_turns(self):
        holding, release = threading.Event(), threading.Event()

        def hold():
            with turn.taken(self.engine, 5.0) as had:
                self.assertTrue(had)
                holding.set()
                release.wait(30)
        holder = threading.Thread(target=hold)
        holder.start()
        self.assertTrue(holding.wait(30))
        self.assertFalse(had(self.engine, 0.2))
        release.set()
        holder.join(30)
        self.assertTrue(had(self.engine, 5.0))


class TestSQLiteTurn(TurnTests, index_base.IndexDBTestCase):

    def test_in_memory_there_is_no_other_process(self):
        self.assertFalse(had(sa.create_engine('sqlite://'), 1.0))


class TestMySQLName(index_base.IndexDBTestCase):

    def test_one_name_per_database_within_mysql_s_limit(self):
        names = {turn.mysql_name(d) for d in ('nova_ext', 'x' * 64, None)}
        self.assertEqual(3, len(names))
        self.assertEqual(turn.mysql_name('nova_ext'),
                         turn.mysql_name('nova_ext'))
        self.assertTrue(all(len(n) <= 64 for n in names))


class TestAppliersWaitForTheTurn(index_base.IndexDBTestCase):
    """A list's catch-up and the worker, while another process applies."""

    def setUp(self):
        super().setUp()
        self.flags(query_timeout=30.0, group='nova_ext_index')
        self.ctx = nova_context.get_admin_context()
        self.applied = self.useFixture(fixtures.MockPatchObject(
            refresh, 'refresh', return_value=({}, []))).mock
        pending.mark(self.engine, [('u1', 1.0)])

    def _while_other_holds(self, apply, applies_meanwhile=False):
        """What ``apply`` returns while another process holds the turn.

        :param applies_meanwhile: the other applies the mark and ends its
            turn once ``apply`` waits for it; else ``apply`` returns
            without the turn, not waiting ``query_timeout`` (30 s).
        """
        other = OtherProcess(self, self.url())
        done = []
        thread = threading.Thread(target=lambda: done.append(apply()))
        thread.start()
        if applies_meanwhile:
            thread.join(0.5)
            self.assertEqual([], done)
            pending.unmark(self.engine, pending.take(self.engine, 10))
            other.release()
            thread.join(30)
        else:
            thread.join(10)
        self.assertEqual(1, len(done))
        self.applied.assert_not_called()
        return done[0]

    def url(self):
        return self.engine.url.render_as_string(hide_password=False)

    def test_a_list_finds_the_marks_applied_by_the_other(self):
        self.assertIsNone(self._while_other_holds(
            lambda: catch_up.CatchUp(self.conf.conf)(self.ctx),
            applies_meanwhile=True))

    def test_the_worker_finds_the_marks_applied_by_the_other(self):
        self.assertEqual(0, self._while_other_holds(
            lambda: refresh.process_pending(self.ctx, self.conf.conf),
            applies_meanwhile=True))

    def test_the_worker_waits_for_no_turn_once_another_applied_them(self):
        pending.unmark(self.engine, pending.take(self.engine, 10))
        self.assertEqual(0, self._while_other_holds(
            lambda: refresh.process_pending(self.ctx, self.conf.conf)))

    def test_the_worker_waits_for_no_turn_for_marks_it_passes_over(self):
        # u1's mark applied by this worker and held (it stays): nothing
        # else waits.
        self.assertEqual(0, self._while_other_holds(
            lambda: refresh.process_pending(self.ctx, self.conf.conf,
                                            done={'u1'})))
        self.assertEqual(['u1'], list(pending.take(self.engine, 10)))

    def read(self, uuid, ticket):
        """What another process's read of ``uuid`` writes in the index."""
        writer.apply(self.engine, index_base.cell_read(
            index_base.Cell('cell-1', 3), 1.0, index_base.instance_row(
                uuid, 1, index_base.T0, uuid), ticket=ticket), [uuid])

    def test_a_list_skips_what_another_read_while_it_waited(self):
        other = OtherProcess(self, self.url())
        done = []
        thread = threading.Thread(target=lambda: done.append(
            catch_up.CatchUp(self.conf.conf)(self.ctx)))
        thread.start()
        thread.join(0.5)
        self.assertEqual([], done)
        # Meanwhile: a change of u2, then the other's read of u1, whose
        # mark stays (as a held one does).
        read_ticket = pending.mark(self.engine, [('u2', 2.0)])
        self.read('u1', read_ticket)
        other.release()
        thread.join(30)
        self.assertEqual([None], done)
        (call,) = self.applied.call_args_list
        self.assertEqual(['u2'], list(call.args[2]))
        self.assertEqual(['u1'], list(pending.take(self.engine, 10)))

    def test_a_list_reads_again_what_was_read_before_it_looked(self):
        # Read with the ticket of u1's own mark: maybe before its change.
        self.read('u1', pending.take(self.engine, 10)['u1'])
        self.assertIsNone(catch_up.CatchUp(self.conf.conf)(self.ctx))
        (call,) = self.applied.call_args_list
        self.assertEqual(['u1'], list(call.args[2]))

    def test_a_list_applies_them_itself_past_query_timeout(self):
        self.flags(query_timeout=0.3, group='nova_ext_index')
        OtherProcess(self, self.url())
        self.assertIsNone(catch_up.CatchUp(self.conf.conf)(self.ctx))
        (call,) = self.applied.call_args_list
        self.assertEqual(['u1'], list(call.args[2]))
        self.assertEqual({}, pending.take(self.engine, 10))
