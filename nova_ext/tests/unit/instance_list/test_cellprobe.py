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

import os
import sqlite3

import fixtures
import futurist
import sqlalchemy as sa

from nova_ext.instance_list import cellprobe
from nova_ext.tests.unit import base


class TestAsk(base.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        cellprobe.dispose()
        self.addCleanup(cellprobe.dispose)

    def engine(self, name):
        """Nova's engine of a cell database, as far as the probe reads it."""
        engine = sa.create_engine(
            'sqlite:///%s' % os.path.join(self.tmp, name))
        self.addCleanup(engine.dispose)
        return engine

    def test_a_database_that_answers_keeps_its_connection(self):
        novas = self.engine('cell.db')
        cellprobe.ask(novas)
        (probe,) = cellprobe._ENGINES.values()
        self.assertIsNot(novas, probe)
        self.assertEqual(novas.url, probe.url)
        self.assertEqual(1, probe.pool.checkedin())
        cellprobe.ask(novas)
        self.assertEqual(1, probe.pool.checkedin())
        # One engine per database, whichever of Nova's engines reads it.
        cellprobe.ask(self.engine('cell.db'))
        self.assertEqual([probe], list(cellprobe._ENGINES.values()))
        cellprobe.ask(self.engine('other.db'))
        self.assertEqual(2, len(cellprobe._ENGINES))

    def test_a_database_that_does_not_answer(self):
        gone = self.engine(os.path.join('no-dir', 'cell.db'))
        # The driver's own error: the connection is the pool's, not a
        # SQLAlchemy Connection's, which would wrap it.
        self.assertRaises(sqlite3.OperationalError, cellprobe.ask, gone)
        (probe,) = cellprobe._ENGINES.values()
        self.assertEqual(0, probe.pool.checkedin())

    def test_any_thread_asks_on_the_kept_connections(self):
        novas = self.engine('cell.db')
        cellprobe.ask(novas)
        with futurist.ThreadPoolExecutor(max_workers=4) as pool:
            asked = [pool.submit(cellprobe.ask, novas) for _ in range(8)]
            for future in asked:
                # What it raised, if anything.
                future.result()
        (probe,) = cellprobe._ENGINES.values()
        self.assertLessEqual(probe.pool.checkedin(), cellprobe.POOL_SIZE)

    def test_dispose_forgets_the_engines(self):
        cellprobe.ask(self.engine('cell.db'))
        cellprobe.dispose()
        self.assertEqual({}, cellprobe._ENGINES)
