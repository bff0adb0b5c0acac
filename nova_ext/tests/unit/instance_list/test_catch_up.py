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
"""A list request's check of the cells, made once."""

import time

import fixtures
from nova import context as nova_context
import sqlalchemy as sa

from nova_ext import direct_reads
from nova_ext.index.apply import refresh
from nova_ext.index import generation
from nova_ext.index.marks import holders
from nova_ext.index.marks import pending
from nova_ext.index.marks import process
from nova_ext.index.marks import watch
from nova_ext.index import schema
from nova_ext.instance_list import base as list_base
from nova_ext.instance_list import catch_up
from nova_ext.instance_list import index
from nova_ext.instance_list import page_cache
from nova_ext.tests.unit import base
from nova_ext.tests.unit.index import base as index_base


class Health(object):
    """cellhealth's answer, as the test sets it, and how often asked."""

    def __init__(self):
        self.down = []
        self.asked = 0
        #: The contexts whose check was begun early.
        self.early = set()

    def begun(self, ctx):
        return ctx in self.early

    def down_cells(self, ctx, conf):
        self.early.discard(ctx)
        self.asked += 1
        return list(self.down)


class TestCellCheck(base.TestCase):

    def setUp(self):
        super().setUp()
        self.catch_up = catch_up.CatchUp(self.conf.conf)
        self.health = Health()

    def check(self):
        return self.catch_up.check('ctx', self.health)

    def test_a_pass_where_every_cell_answered_is_the_check(self):
        check = self.check()
        self.assertTrue(check.merges())
        check.take({'c1': True, 'c2': True})
        check.make()
        self.assertEqual(0, self.health.asked)
        self.assertFalse(check.merges())

    def test_a_cell_that_failed_the_pass_has_the_check_made(self):
        # A read may fail for reasons of its own; the check decides.
        check = self.check()
        check.take({'c1': True, 'c2': False})
        self.assertEqual(1, self.health.asked)
        self.health.down = ['c2']
        check = self.check()
        e = self.assertRaises(list_base.Unservable, check.take,
                              {'c1': True, 'c2': False})
        self.assertIn('c2', str(e))
        self.assertTrue(self.catch_up.cells_down)

    def test_no_pass_has_the_check_made(self):
        check = self.check()
        check.take({})
        self.assertEqual(1, self.health.asked)
        check.make()
        self.assertEqual(1, self.health.asked)

    def test_a_check_begun_early_is_the_check(self):
        # Not a pass over the cells: the request's check is under way.
        self.health.early.add('ctx')
        check = self.check()
        self.assertFalse(check.merges())
        check.make()
        self.assertEqual(1, self.health.asked)
        self.assertFalse(check.merges())

    def test_while_cells_were_found_down_each_request_checks_alone(self):
        # So that the request after the cells' return logs it.
        self.health.down = ['c1']
        self.assertRaises(list_base.Unservable, self.check().make)
        check = self.check()
        self.assertFalse(check.merges())
        self.health.down = []
        check.make()
        self.assertFalse(self.catch_up.cells_down)
        self.assertTrue(self.check().merges())


class TestCatchUpChecksFirst(index_base.IndexDBTestCase):

    def test_no_cell_read_after_cells_were_found_down_meanwhile(self):
        catch_up_ = catch_up.CatchUp(self.conf.conf)
        health = Health()
        pending.mark(self.engine, [('u1', 1.0)])
        check = catch_up_.check('ctx', health)
        read = self.useFixture(fixtures.MockPatchObject(
            refresh, 'apply_marks', return_value=set())).mock

        class Watch(object):
            # Runs after the request decided to check in its pass, before
            # it takes the lock: another request finds cells down here.
            def settle(self, engine):
                catch_up_.cells_down = True
                health.down = ['c2']
        self.useFixture(fixtures.MockPatchObject(
            watch, 'get_watch', return_value=Watch()))
        e = self.assertRaises(list_base.Unservable, catch_up_, 'ctx', check)
        self.assertIn('are down', str(e))
        read.assert_not_called()
        self.assertEqual(1, health.asked)


class TestGenerationReadWithTheMarks(index_base.IndexDBTestCase):
    """The generation a catch-up gives the request's page cache."""

    def setUp(self):
        super().setUp()
        self.flags(page_cache_size=4, group='nova_ext_instance_list')
        page_cache.reset()
        self.addCleanup(page_cache.reset)
        self.catch_up = catch_up.CatchUp(self.conf.conf)
        self.ctx = nova_context.get_admin_context()

    def test_nothing_waiting_gives_the_generation_it_was_read_with(self):
        now = generation.read(self.engine, direct_reads.first)
        self.assertEqual(now, self.catch_up(self.ctx))
        # Which the request's page key then takes as it is.
        driver = index.IndexDriver(self.conf.conf)
        given = (now[0] + 7, 'read-with-the-marks')
        self.assertEqual(given, driver.page_key(self.ctx, ('q',), given)[2])
        self.assertEqual(now, driver.page_key(self.ctx, ('q',))[2])

    def test_changes_applied_give_none(self):
        # Applying moved the generation: the request reads it after.
        pending.mark(self.engine, [('u1', 1.0)])
        applied = self.useFixture(fixtures.MockPatchObject(
            refresh, 'apply_marks', return_value=set())).mock
        self.assertIsNone(self.catch_up(self.ctx))
        self.assertEqual(1, applied.call_count)


class TestOwnChangesRecordedFirst(index_base.IndexDBTestCase):
    """A process's captured changes still in its marker, at a list."""

    def setUp(self):
        super().setUp()
        # The marker commits only when urged.
        self.flags(notification_batch_timeout=3600, query_timeout=0.5,
                   group='nova_ext_index')
        process.reset()
        self.addCleanup(process.reset)
        self.catch_up = catch_up.CatchUp(self.conf.conf)
        self.applied = self.useFixture(fixtures.MockPatchObject(
            refresh, 'apply_marks', return_value=set())).mock
        process.get_batcher(self.conf.conf).add_all(['u1'], 5.0)
        self.assertEqual(['u1'], list(process.held()))

    def test_recorded_then_applied(self):
        self.catch_up('ctx')
        self.assertEqual({}, process.held())
        (call,) = self.applied.call_args_list
        self.assertEqual(['u1'], list(call.args[2]))

    def test_unrecordable_is_nova_s(self):
        with self.engine.begin() as conn:
            conn.execute(sa.text(
                "CREATE TRIGGER refuse_marks BEFORE INSERT ON "
                "nova_ext_index_pending BEGIN SELECT RAISE(ABORT, "
                "'refused'); END"))
        e = self.assertRaises(list_base.Unservable, self.catch_up, 'ctx')
        self.assertEqual('1 captured changes not recorded in the index yet',
                         str(e))
        self.applied.assert_not_called()
        self.assertEqual(['u1'], list(process.held()))


class TestOtherProcessesRecorded(index_base.IndexDBTestCase):
    """Another holder's changes, known to that process alone until it beats.

    The other holder is a real :class:`holders.Lease` of its own name, as
    another process has (the real processes: the deployment tests).
    """

    def setUp(self):
        super().setUp()
        self.flags(holder_heartbeat_interval=0.2, group='nova_ext_index')
        process.reset()
        self.addCleanup(process.reset)
        self.catch_up = catch_up.CatchUp(self.conf.conf)
        self.other = holders.Lease(self.conf.conf)
        self.addCleanup(self.other.stop)
        self.recorded = False
        self.other.ready = lambda timeout: self.recorded

    def wait_for(self, served, reason=''):
        """None once served; else the reason, once it holds ``reason``."""
        deadline = time.monotonic() + 10
        while True:
            try:
                self.catch_up._others_recorded()
            except list_base.Unservable as e:
                if not served and reason in str(e):
                    return str(e)
            else:
                if served:
                    return None
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.02)

    def test_served_only_while_each_beats(self):
        self.other.ensure(self.engine)
        reason = self.wait_for(served=False, reason='have not shown')
        self.assertIn('1 holders of marks have not shown in 0.4 s', reason)
        self.assertIn(self.other.name, reason)
        self.recorded = True
        self.assertIsNone(self.wait_for(served=True))
        # Changes it cannot record: Nova's again, within the window.
        self.recorded = False
        stopped = time.monotonic()
        self.wait_for(served=False)
        self.assertLess(time.monotonic() - stopped,
                        holders.window(self.conf.conf) + 0.2)

    def test_this_process_s_own_holder_is_not_waited_for(self):
        own = holders.get_lease(self.conf.conf)
        # What it has not recorded, this process knows (process.held()).
        own.ready = lambda timeout: False
        own.ensure(self.engine)
        self.assertIsNone(self.wait_for(served=True))

    def test_nova_s_while_the_holders_cannot_be_read(self):
        own = holders.get_lease(self.conf.conf)
        own.ensure(self.engine)
        self.assertIsNone(self.wait_for(served=True))

        def rename(old, new):
            with self.engine.begin() as conn:
                conn.execute(sa.text('ALTER TABLE %s RENAME TO %s' % (
                    old, new)))
        # A holder recorded meanwhile would be unknown here: the last read
        # holds no longer than a vouch seen in it would.
        rename(schema.HOLDERS.name, 'holders_away')
        self.assertEqual('the holders of marks not read in the last 0.4 s',
                         self.wait_for(served=False))
        rename('holders_away', schema.HOLDERS.name)
        self.assertIsNone(self.wait_for(served=True))
