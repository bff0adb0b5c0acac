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
"""The index on a real PostgreSQL: same answers as Nova.

The cells stay on the harness's SQLite databases; only the index moves,
as in a deployment whose index lives on the operator's database cluster.
"""

import uuid

import sqlalchemy as sa

from nova_ext.index import source
from nova_ext.tests.functional import fixtures as ext_fixtures
from nova_ext.tests.functional import sqlserver
from nova_ext.tests.functional import test_index_parity


#: Query parameters that Nova filters with a regular expression.
REGEX_FILTERS = ('name=', 'node=', 'hostname=', 'key_name=',
                 'reservation_id=', 'launch_index=', 'availability_zone=',
                 'power_state=', 'kernel_id=', 'ramdisk_id=')


class PostgreSQLMixin(object):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.sql_server = sqlserver.PostgreSQL()
        cls.addClassCleanup(cls.sql_server.stop)
        cls.sql_server.start()

    def _setup_services(self):
        url = self.sql_server.create_database(
            'idx_%s' % uuid.uuid4().hex[:12])
        self.index = self.useFixture(
            ext_fixtures.IndexFixture(self, connection=url))
        self.nova_500s = []
        self.null_sort_differences = []
        # Skip IndexTestCase's own SQLite index.
        super(test_index_parity.IndexTestCase, self)._setup_services()


class TestIndexParityOnPostgreSQL(PostgreSQLMixin,
                                  test_index_parity.TestIndexParity):
    # Every microversion is covered on SQLite; the backend does not change
    # rendering, only the query.
    test_every_microversion = None

    def assertServed(self, served, before, after, got, context):
        # The harness's cells are SQLite, so Nova writes its regular
        # expression filters for SQLite; the index on PostgreSQL hands
        # those queries to Nova, and says why.
        if (served is None and got.status_code == 200 and
                after['unservable'] == before['unservable'] + 1 and
                'regular expression' in after['last_reason']):
            self.assertTrue(any(key in context for key in REGEX_FILTERS),
                            context)
            served = False
        super().assertServed(served, before, after, got, context)

    def test_schema_has_every_column_of_novas_tables(self):
        self.assertEqual('postgresql', self.index.engine.dialect.name)
        inspector = sa.inspect(self.index.engine)
        for table in source.tables():
            have = {c['name'] for c in inspector.get_columns(table.name)}
            self.assertEqual(set(table.c.keys()), have, table.name)


class TestIndexFollowsNotificationsOnPostgreSQL(
        PostgreSQLMixin, test_index_parity.TestIndexFollowsNotifications):
    pass
