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
"""A writing transaction run again when it loses a race, on a real SQLite
index (MySQL's deadlocks: nova_ext.tests.functional.test_index_backends)."""

from oslo_db import exception as db_exc
import sqlalchemy as sa

from nova_ext.index.apply import source
from nova_ext.index import db
from nova_ext.tests.unit.index import base


class TestWrite(base.IndexDBTestCase):

    def held(self):
        with self.engine.connect() as conn:
            return conn.execute(sa.select(sa.func.count()).select_from(
                source.INSTANCES)).scalar()

    def test_a_lost_race_runs_again_until_it_wins(self):
        tries = []

        def write(conn):
            tries.append(conn)
            conn.execute(sa.insert(source.INSTANCES).values(
                id=len(tries), uuid='u-%d' % len(tries), deleted=0))
            if len(tries) < 4:
                # Rolled back, as a deadlock's victim is.
                raise db_exc.DBDeadlock()
            return len(tries)
        self.assertEqual(4, db.write(self.engine, write))
        self.assertEqual(1, self.held())

    def test_up_to_its_attempts(self):
        tries = []

        def write(conn):
            tries.append(conn)
            raise db_exc.DBDeadlock()
        self.assertRaises(db_exc.DBDeadlock, db.write, self.engine, write,
                          attempts=2)
        self.assertEqual(2, len(tries))

    def test_another_error_is_not_run_again(self):
        tries = []

        def write(conn):
            tries.append(conn)
            raise db_exc.DBError('broken')
        self.assertRaises(db_exc.DBError, db.write, self.engine, write)
        self.assertEqual(1, len(tries))
