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
"""What a list request's catch-up need not read again, and Nova's answer.

A request skips the instances another reader read after it looked at the
sequence (``pending.look``). The lists that skip are compared byte
for byte with Nova's answer at that moment, and must have been served by
the index.
"""

import contextlib
import threading

import fixtures
from nova import context as nova_context

from nova_ext import conf as ext_conf
from nova_ext.index.apply import refresh
from nova_ext.index.apply import turn
from nova_ext.index.marks import pending
from nova_ext.index.marks import process
from nova_ext.index.marks import sequence
from nova_ext.seams import api as api_entry_point
from nova_ext.tests.functional import answers
from nova_ext.tests.functional import test_index_capture as capture
from nova_ext.tests.unit.index import base as index_base


class TestCatchUpReadsOnce(capture._CaptureBase):

    def setUp(self):
        super().setUp()
        self.server = self._built()['id']
        self.assertSameAnswer(self.api, 'servers/detail', served=True)
        self.assertEqual({}, self.marks())
        # Releases wait until a test flushes them: the marks stay held.
        process.reset()
        self.flags(notification_batch_timeout=3600,
                   capture_release_delay=3600, group='nova_ext_index')
        self.batcher = process.get_batcher(ext_conf.CONF)
        self.reads = self.useFixture(fixtures.MockPatchObject(
            refresh, 'apply_marks', side_effect=refresh.apply_marks)).mock

    def marks(self):
        return pending.take(self.index.engine, 10)

    def another_reads_first(self, own_number):
        """Have another process read the marks before this one's turn.

        After the request looked at the sequence and before its turn. The
        other's read takes a number of its own (``own_number``), as every
        read does; or it has the number current when the request looked,
        as a read whose number was taken before would.
        """
        real, other = turn.held, []

        @contextlib.contextmanager
        def held(engine, wait):
            if not other:
                with contextlib.ExitStack() as stack:
                    if not own_number:
                        stack.enter_context(fixtures.MockPatchObject(
                            sequence, 'take', side_effect=index_base.ticket))
                    other.append(refresh.apply_marks.side_effect(
                        nova_context.get_admin_context(), ext_conf.CONF,
                        self.marks()))
            with real(engine, wait) as turn_held:
                yield turn_held
        self.useFixture(fixtures.MockPatchObject(
            turn, 'held', side_effect=held))
        return other

    def test_a_request_skips_what_another_read_after_it_looked(self):
        self.api.put_server(self.server, {'server': {'name': 'renamed'}})
        self.assertEqual([self.server], list(self.marks()))
        other = self.another_reads_first(own_number=True)
        self.assertSameAnswer(self.api, 'servers/detail?name=renamed',
                              served=True)
        self.assertEqual([set()], other)
        # The request read nothing itself.
        self.assertEqual(0, self.reads.call_count)
        # Held: the mark stays, until the release.
        self.assertEqual([self.server], list(self.marks()))
        self.assertListsNow(('', 'name=renamed'))
        self.assertTrue(self.batcher.flush(10))
        self.assertListsNow(('', 'name=renamed'))
        self.assertEqual({}, self.marks())

    def test_requests_that_waited_for_a_read_skip_it(self):
        # Four lists look while the mark is held, before any of them has
        # the turn: the first to have it reads the server, and its read's
        # ticket, a number of its own, is higher than the three others'.
        self.api.put_server(self.server, {'server': {'name': 'renamed'}})
        self.assertEqual([self.server], list(self.marks()))
        looked = threading.Barrier(4, timeout=60)
        # The harness calls nova-api in the thread of the request's client.
        ours = threading.local()
        real = turn.held

        @contextlib.contextmanager
        def held(engine, wait):
            if getattr(ours, 'list', False):
                looked.wait()
            with real(engine, wait) as turn_held:
                yield turn_held
        self.useFixture(fixtures.MockPatchObject(
            turn, 'held', side_effect=held))
        uri = 'servers/detail?name=renamed'
        before = self.selector.stats.snapshot()
        got, errors = [], []

        def list_servers():
            ours.list = True
            try:
                got.append(answers.get(self._get, self.api, uri))
            except Exception as e:
                errors.append(e)
        threads = [threading.Thread(target=list_servers) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        self.assertEqual([], errors)
        self.assertEqual(4, len(got))
        self.assertEqual(before['served'] + 4,
                         self.selector.stats.snapshot()['served'])
        self.assertEqual(1, self.reads.call_count)
        # Nothing changed since: Nova's answer now is theirs.
        with api_entry_point.stock_instance_list():
            want = answers.get(self._get, self.api, uri)
        self.assertEqual(['renamed'],
                         [s['name'] for s in want.json()['servers']])
        for answer in got:
            want_now, got_now = answers.same_moment(want, answer)
            self.assertEqual(want_now, got_now)

    def test_a_read_with_the_same_ticket_is_read_again(self):
        # The other's read has the ticket the request read: it may have
        # begun before the request looked, and before a commit the request
        # must show.
        self.api.put_server(self.server, {'server': {'name': 'renamed'}})
        other = self.another_reads_first(own_number=False)
        self.assertSameAnswer(self.api, 'servers/detail?name=renamed',
                              served=True)
        self.assertEqual([set()], other)
        self.assertEqual(1, self.reads.call_count)
        self.assertListsNow(('', 'name=renamed'))
