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
"""Applying pending marks, with one cell down."""

import time
from unittest import mock

from oslo_db import exception as db_exc
import sqlalchemy as sa

from nova_ext.index import db
from nova_ext.index import pending
from nova_ext.index import refresh
from nova_ext.tests.unit.index import base as index_base


class TestProcessPending(index_base.FailingCellTestCase):

    def test_counts_applied_marks_only(self):
        number = pending.mark(self.engine, [('down-1', 1.0), ('up-1', 2.0)])
        ctx = mock.sentinel.ctx
        skip = set()
        self.assertEqual(1, refresh.process_pending(ctx, self.conf.conf,
                                                    skip=skip))
        self.assertEqual({'down-1'}, skip)
        # Everything left has failed: skipped, nothing is taken.
        self.assertEqual(0, refresh.process_pending(ctx, self.conf.conf,
                                                    skip=skip))
        self.assertEqual({'down-1': 1, 'up-1': 1}, self.tried)
        # Taken again without skip, it fails again: nothing applied.
        self.assertEqual(0, refresh.process_pending(ctx, self.conf.conf))
        self.assertEqual({'down-1': number}, pending.take(self.engine, 10))
        with self.engine.connect() as conn:
            self.assertEqual(2, conn.execute(
                sa.select(pending.PENDING.c.attempts)).scalar())

    def test_a_held_mark_is_applied_once_per_pass(self):
        # A Nova transaction still under way holds up-1's mark.
        now = time.time()
        with self.engine.begin() as conn:
            conn.execute(sa.insert(pending.HOLDERS).values(
                holder='h', host='x', pid=1, beats=0, started_at=now))
        number = pending.mark(self.engine, [('up-1', now)],
                              [('up-1', 'h', 1)])
        ctx = mock.sentinel.ctx
        done = set()
        self.assertEqual(1, refresh.process_pending(ctx, self.conf.conf,
                                                    done=done))
        self.assertEqual({'up-1'}, done)
        self.assertEqual(0, refresh.process_pending(ctx, self.conf.conf,
                                                    done=done))
        self.assertEqual({'up-1': 1}, self.tried)
        self.assertEqual({'up-1': number}, pending.take(self.engine, 10))

    def test_a_lost_race_is_written_again(self):
        # Not a failure of the cell: its marks need not wait for a retry.
        # The index's writes go through db.write, which runs them again.
        write = mock.Mock(side_effect=[db_exc.DBDuplicateEntry(), 'done'])
        self.assertEqual('done', db.write(self.engine, write))
        self.assertEqual(2, write.call_count)
        write = mock.Mock(side_effect=db_exc.DBError('index away'))
        self.assertRaises(db_exc.DBError, db.write, self.engine, write)
        self.assertEqual(1, write.call_count)
