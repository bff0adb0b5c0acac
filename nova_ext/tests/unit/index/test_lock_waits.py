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
"""Lock waits of the index's connections on MySQL and PostgreSQL.

The waits themselves are tested against the real servers in
nova_ext.tests.functional.test_index_faults.
"""

import urllib.parse

from oslo_db import exception as db_exc

from nova_ext.index import db
from nova_ext.index import lock_waits
from nova_ext.tests.unit import base


class TestConnectionParameters(base.TestCase):

    def params(self, url, timeout):
        return dict(urllib.parse.parse_qsl(
            lock_waits.connection_parameters(url, timeout)))

    def test_mysql_waits_whole_seconds(self):
        self.assertEqual(
            {'connect_timeout': '3', 'init_command':
             'SET SESSION innodb_lock_wait_timeout = 3, '
             'lock_wait_timeout = 3'},
            self.params('mysql+pymysql://u:p@h/i', 2.5))

    def test_postgresql_waits_milliseconds(self):
        self.assertEqual(
            {'connect_timeout': '3', 'options': '-c lock_timeout=2500'},
            self.params('postgresql+psycopg2://u@h/i', 2.5))

    def test_sqlite_has_none(self):
        self.assertEqual('', lock_waits.connection_parameters(
            'sqlite:////x/i.sqlite', 2.5))


class TestTimedOut(base.TestCase):

    def test_a_lock_wait_timeout_is_not_a_race_lost(self):
        timed_out = db_exc.DBDeadlock(Exception(
            "(1205, 'Lock wait timeout exceeded; try restarting "
            "transaction')"))
        deadlock = db_exc.DBDeadlock(Exception(
            "(1213, 'Deadlock found when trying to get lock')"))
        self.assertTrue(lock_waits.timed_out(timed_out))
        self.assertFalse(db.lost_race(timed_out))
        self.assertTrue(db.lost_race(deadlock))
        # PostgreSQL's lock_timeout, which oslo.db leaves a DBError.
        pg_timed_out = db_exc.DBError(Exception(
            'canceling statement due to lock timeout'))
        self.assertTrue(lock_waits.timed_out(pg_timed_out))
        self.assertFalse(db.lost_race(pg_timed_out))
