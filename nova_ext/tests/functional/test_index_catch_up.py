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
sequence (``sequence.read_after``). The lists that skip are compared byte
for byte with Nova's answer at that moment, and must have been served by
the index.
"""

import contextlib

import fixtures
from nova import context as nova_context

from nova_ext import conf as ext_conf
from nova_ext.index.apply import refresh
from nova_ext.index.apply import turn
from nova_ext.index import db
from nova_ext.index.marks import pending
from nova_ext.index.marks import process
from nova_ext.index.marks import sequence
from nova_ext.tests.functional import test_index_capture as capture


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

    def another_reads_first(self, number):
        """Have another process read the marks before this one's turn.

        After the request looked at the sequence and before its turn: if
        ``number``, a number is taken first (another write's mark), so
        that the other's read has a higher ticket than the request's.
        """
        real, other = turn.taken, []

        @contextlib.contextmanager
        def taken(engine, wait):
            if not other:
                if number:
                    db.write(engine, sequence.next_number)
                other.append(refresh.apply_marks.side_effect(
                    nova_context.get_admin_context(), ext_conf.CONF,
                    self.marks()))
            with real(engine, wait) as had:
                yield had
        self.useFixture(fixtures.MockPatchObject(
            turn, 'taken', side_effect=taken))
        return other

    def test_a_request_skips_what_another_read_after_it_looked(self):
        self.api.put_server(self.server, {'server': {'name': 'renamed'}})
        self.assertEqual([self.server], list(self.marks()))
        other = self.another_reads_first(number=True)
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

    def test_a_read_with_the_same_ticket_is_read_again(self):
        # No number was taken between the request's look and the other's
        # read: that read may have begun before the request looked, and
        # before a commit the request must show.
        self.api.put_server(self.server, {'server': {'name': 'renamed'}})
        other = self.another_reads_first(number=False)
        self.assertSameAnswer(self.api, 'servers/detail?name=renamed',
                              served=True)
        self.assertEqual([set()], other)
        self.assertEqual(1, self.reads.call_count)
        self.assertListsNow(('', 'name=renamed'))
