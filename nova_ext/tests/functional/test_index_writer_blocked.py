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
"""The change stream with the index's writer blocked for a while."""

import sqlite3


from nova_ext import conf as ext_conf
from nova_ext.index.marks import process
from nova_ext.tests.functional import fixtures as ext_fixtures
from nova_ext.tests.functional import test_index_capture as capture_tests
from nova_ext.tests.functional import test_index_changes as changes
from nova_ext.tests.functional import test_index_parity as parity


class TestChangeStreamWriterBlocked(changes._ChangeStream,
                                    capture_tests._CaptureBase):
    """The index's writer blocked: locked by another writer, then read-only.

    While nova-api holds changes it cannot record, Nova answers; every
    answer is still Nova's at that moment. Once the writer is back, the
    held changes are recorded (nothing is lost) and the index serves
    again: the served share counts the steps before the block and from a
    few steps after it.

    The block does not slow Nova's writes down: once a hold (the mark a
    Nova transaction writes before it commits) could not be written, the
    holds that follow wait for nothing until the marker has recorded
    changes again. Counted, not timed: during the block, no more holds
    fail than the marker's successful commits plus one. Under eventlet
    (the harness's default), each such failure is a lock wait of up to
    ``capture_timeout`` for the whole process; without the stall every
    write of the block would wait.
    """

    NOVA_EXT_OPTIONS = dict(
        parity.FAST_OPTIONS,
        nova_ext_index=dict(capture_tests.CAPTURE, max_lag=5),
        nova_ext_instance_list=dict(
            parity.FAST_OPTIONS['nova_ext_instance_list'], retry_interval=1))
    STEPS = 75
    LOCKED = range(15, 27)
    READ_ONLY = range(27, 40)
    #: Steps after the block by which the index serves again.
    GRACE = 20

    def setUp(self):
        super().setUp()
        self.step = None
        self.marks = self.useFixture(ext_fixtures.MarkWrites(
            lambda: self.blocked(self.step)))

    def blocked(self, step):
        return (step is not None and
                self.LOCKED.start <= step < self.READ_ONLY.stop)

    def assertNotSlowed(self):
        counts = self.marks.counts
        # Holds were counted, and the block made the marks' writes fail.
        self.assertGreater(counts[(False, True, False)], 0, counts)
        self.assertGreater(counts[(True, False, True)], 0, counts)
        self.assertLessEqual(self.marks.failed_holds(True),
                             self.marks.commits(True) + 1, counts)

    def before_step(self, step):
        self.step = step
        path = self.index.connection[len('sqlite:///'):]
        if step == self.LOCKED.start:
            self.blocker = sqlite3.connect(path, isolation_level=None)
            self.blocker.execute('BEGIN IMMEDIATE')
        elif step == self.READ_ONLY.start:
            self.blocker.execute('ROLLBACK')
            self.blocker.close()
            # Root ignores file modes: the index opened read-only instead.
            read_only = 'sqlite:///file:%s?mode=ro&uri=true' % path
            self.writable = self.index.connection
            self.flags(connection=read_only, group='nova_ext_index')
            self.assertTrue(process.held())
        elif step == self.READ_ONLY.stop:
            self.assertTrue(process.held())
            self.flags(connection=self.writable, group='nova_ext_index')

    def counted(self, step):
        return not (self.LOCKED.start <= step <
                    self.READ_ONLY.stop + self.GRACE)

    def _stream(self, rng):
        super()._stream(rng)
        self.at = 'the checks after the stream'
        # Nothing held back is lost: recorded, and applied by the next list.
        self.assertTrue(process.get_batcher(ext_conf.CONF).flush(30))
        self.assertEqual({}, process.held())
        self.assertSameNow(self.admin_api, 'servers/detail?all_tenants=1',
                           'after the block')
        self.assertNotSlowed()
