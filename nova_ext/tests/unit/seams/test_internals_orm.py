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
"""What nova_ext relies on of Nova's instance list query in the ORM.

``nova_ext.seams.internals.orm`` narrows the list query of
``nova.db.main.api.instance_get_all_by_filters_sort`` from a
``do_orm_execute`` listener, telling it from Nova's other queries and
handing back a result by SQLAlchemy's private attributes: these tests run
Nova's query on a database of its own and fail when the query is no
longer narrowed, or narrowed where it must not be.
"""

import datetime

from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova.db.main import models
from oslo_utils import uuidutils
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import orm as sa_orm

from nova_ext.seams.internals import orm
from nova_ext.tests import fixtures as ext_fixtures
from nova_ext.tests.unit import base

COLUMNS = ('id', 'uuid', 'deleted', 'created_at')


def _listening():
    return event.contains(sa_orm.Session, 'do_orm_execute', orm._narrow)


class TestNarrowing(base.TestCase):

    def setUp(self):
        super().setUp()
        # Nova picks its regular expression operator by this option.
        self.flags(connection='sqlite://', group='database')
        engine = self.useFixture(ext_fixtures.InMemoryDatabase(
            main_db_api.context_manager, models.BASE.metadata)).engine
        self.uuids = [uuidutils.generate_uuid() for _ in range(3)]
        with engine.begin() as conn:
            for n, uuid in enumerate(self.uuids):
                conn.execute(sa.insert(models.Instance.__table__).values(
                    uuid=uuid, project_id='p1', user_id='u1', deleted=0,
                    display_name='server-%d' % n,
                    created_at=datetime.datetime(2026, 1, 1, 0, 0, n)))
        self.ctx = nova_context.get_admin_context()
        self.columns = COLUMNS
        orm.detach_narrowing()
        self.addCleanup(orm.detach_narrowing)

    def _list(self, filters=None, **kwargs):
        before = orm.narrowed_queries
        rows = main_db_api.instance_get_all_by_filters_sort(
            self.ctx, filters or {}, columns_to_join=[],
            sort_keys=['created_at'],
            sort_dirs=['asc'], **kwargs)
        return rows, orm.narrowed_queries - before

    def test_not_installed_until_attached(self):
        self.assertFalse(_listening())
        self.assertFalse(orm.narrowing())
        rows, narrowed = self._list()
        self.assertEqual(0, narrowed)
        self.assertEqual('server-0', rows[0]['display_name'])

    def test_the_list_query_reads_the_columns(self):
        self.assertTrue(orm.attach_narrowing(lambda: self.columns))
        self.assertTrue(_listening())
        rows, narrowed = self._list()
        self.assertEqual(1, narrowed)
        self.assertEqual(self.uuids, [row['uuid'] for row in rows])
        # Nova's own code still fills in its manual joins.
        self.assertEqual(set(COLUMNS) | {'metadata', 'system_metadata',
                                         'fault'}, set(rows[0]))

    def test_a_column_beside_is_read_in_the_same_query(self):
        # A table of the same database keyed by uuid, with a row for some
        # of the instances only.
        book = sa.table('book', sa.column('uuid', sa.String),
                        sa.column('read_at', sa.Float))
        engine = main_db_api.get_engine()
        with engine.begin() as conn:
            conn.execute(sa.text('CREATE TABLE book (uuid VARCHAR(36) '
                                 'PRIMARY KEY, read_at FLOAT)'))
            conn.execute(sa.insert(book).values(uuid=self.uuids[1],
                                                read_at=1.5))
        statements = []
        event.listen(engine, 'before_cursor_execute',
                     lambda *args: statements.append(args[2]))
        self.columns = COLUMNS + (
            orm.Beside('version', book.c.read_at, book.c.uuid),)
        orm.attach_narrowing(lambda: self.columns)
        rows, narrowed = self._list()
        self.assertEqual(1, narrowed)
        self.assertEqual(
            [(self.uuids[0], None), (self.uuids[1], 1.5),
             (self.uuids[2], None)],
            [(row['uuid'], row['version']) for row in rows])
        self.assertEqual(1, sum('book' in s for s in statements))
        # Joined after Nova's own joins (a tag filter).
        with engine.begin() as conn:
            for uuid in self.uuids[1:]:
                conn.execute(sa.insert(models.Tag.__table__).values(
                    resource_id=uuid, tag='t'))
        rows, narrowed = self._list(filters={'tags': ['t']})
        self.assertEqual([(self.uuids[1], 1.5), (self.uuids[2], None)],
                         [(row['uuid'], row['version']) for row in rows])

    def test_each_instance_once_as_novas_query_gives_it(self):
        # tags-any joins the tags: a server with both tags is two rows of
        # the statement, and one Instance of Nova's query, before its limit
        # is counted as well as after.
        engine = main_db_api.get_engine()
        with engine.begin() as conn:
            for uuid in self.uuids[:2]:
                for tag in ('t1', 't2'):
                    conn.execute(sa.insert(models.Tag.__table__).values(
                        resource_id=uuid, tag=tag))
        filters = {'tags-any': ['t1', 't2']}
        want = [[row['uuid'] for row in self._list(filters, limit=limit)[0]]
                for limit in (None, 2, 3)]
        self.assertEqual([self.uuids[:2], self.uuids[:1], self.uuids[:2]],
                         want)
        orm.attach_narrowing(lambda: ('uuid', 'created_at'))
        got = []
        for limit in (None, 2, 3):
            rows, narrowed = self._list(filters, limit=limit)
            self.assertEqual(1, narrowed)
            got.append([row['uuid'] for row in rows])
        self.assertEqual(want, got)

    def test_whole_rows_when_no_columns_are_asked(self):
        orm.attach_narrowing(lambda: self.columns)
        self.columns = None
        rows, narrowed = self._list()
        self.assertEqual(0, narrowed)
        self.assertEqual('server-0', rows[0]['display_name'])

    def test_the_markers_lookup_is_not_narrowed(self):
        orm.attach_narrowing(lambda: self.columns)
        rows, narrowed = self._list(marker=self.uuids[0])
        self.assertEqual(1, narrowed)
        self.assertEqual(self.uuids[1:], [row['uuid'] for row in rows])
        instance = main_db_api.instance_get_by_uuid(
            self.ctx, self.uuids[0], columns_to_join=[])
        self.assertEqual('server-0', instance['display_name'])

    def test_detach_removes_the_listener(self):
        orm.attach_narrowing(lambda: self.columns)
        orm.attach_narrowing(lambda: self.columns)
        orm.detach_narrowing()
        self.assertFalse(_listening())
        rows, narrowed = self._list()
        self.assertEqual(0, narrowed)
        self.assertEqual('server-0', rows[0]['display_name'])


class TestVersionGate(base.TestCase):

    def setUp(self):
        super().setUp()
        orm.detach_narrowing()
        self.addCleanup(orm.detach_narrowing)

    def test_refuses_on_an_untested_nova(self):
        self.useFixture(ext_fixtures.UntestedNova())
        self.assertFalse(orm.attach_narrowing(lambda: COLUMNS))
        self.assertFalse(_listening())

    def test_the_installed_nova_is_tested(self):
        orm._check()
