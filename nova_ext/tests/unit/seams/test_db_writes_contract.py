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
"""The installed Nova writes nothing a server list shows unseen by capture.

Capture (``nova_ext.index.marks.capture``, attached by
``nova_ext.seams.db_writes``) sees the writes Nova makes through ORM
sessions to the tables of ``capture.TRACKED``. These tests read Nova itself
and fail when it changes so that capture would miss a write: a new table
keyed by instance that is neither tracked nor known to be unlisted, or a new
function that runs statements on a bare connection, outside any session.
Change the lists below only after reading the Nova change that broke them.
"""

import ast
import functools
import glob
import os

import nova
from nova.db.api import models as api_models
from nova.db.main import models

from nova_ext.index.marks import capture
from nova_ext.tests.unit import base

#: Tables keyed by instance that capture does not track, and why that is
#: right (read in Nova 34's views/servers.py and compute.api.API.get_all).
#: The shadow_* tables have no models: only the archive functions of
#: KNOWN_BARE_WRITERS write them, and no list reads them.
NOT_LISTED = {
    'console_auth_tokens': 'console tokens: the remote consoles API only',
    'instance_actions': 'the os-instance-actions API only',
    'instance_actions_events': 'the events of instance_actions: the same',
    'instance_group_member': 'server_groups is shown by GET /servers/{id} '
                             '(2.71), never by a list',
    'instance_id_mappings': 'EC2 ids: the metadata service only',
    'migrations': 'the migrations APIs only',
    'share_mapping': 'the server shares API (2.97) only',
    'virtual_interfaces': 'device tags: lists show the info cache addresses',
    'volume_usage_cache': 'volume usage notifications only',
}

#: Functions that run statements on a bare connection and may write, and
#: why capture still sees every change they make to what a list shows.
KNOWN_BARE_WRITERS = {
    'nova.db.main.api._archive_deleted_rows_for_table':
        'moves soft-deleted rows (deleted instances and their children) to '
        'shadow tables; nova-manage db archive_deleted_rows then deletes '
        'those instances\' mappings in a session '
        '(InstanceMappingList.destroy_bulk), which capture sees',
    'nova.db.main.api.archive_deleted_rows':
        'hands its engine to _archive_deleted_rows_for_table; the same',
    'nova.db.main.api.purge_shadow_tables':
        'deletes from shadow_* tables only, which no list reads',
}

#: Functions that run only select()s on a bare connection (proven below).
KNOWN_BARE_READERS = {
    'nova.db.main.api._compute_node_fetchall': 'compute nodes',
    'nova.db.main.api.compute_node_statistics': 'compute node sums',
    'nova.db.main.api._get_fk_stmts':
        'child rows to archive; it builds, not runs, their inserts/deletes',
}

#: Tables keyed by instance through a column not named instance_uuid
#: (instance_destroy deletes instance_id_mappings rows by their uuid).
BY_INSTANCE = {'instances': 'uuid', 'tags': 'resource_id',
               'instance_id_mappings': 'uuid'}

#: Calls that run SQL, or get what runs it, when not made on a session:
#: a Session's own connection() runs statements no session event sees.
_EXECUTE = frozenset(['execute', 'exec_driver_sql'])
_BARE = _EXECUTE | {'connect', 'begin', 'raw_connection', 'get_engine'}
SOURCES = ['db/main/api.py', 'db/api/api.py', 'objects/*.py']


def _instance_tables():
    """{name: Table} of Nova's model tables whose rows belong to instances.

    A row belongs to an instance if it holds its uuid, or refers by foreign
    key to a row that does (instance_actions_events).
    """
    found = {}
    for metadata in (models.BASE.metadata, api_models.BASE.metadata):
        for table in metadata.sorted_tables:  # parents first
            if (BY_INSTANCE.get(table.name, 'instance_uuid') in table.c or
                    any(fk.column.table.name in found
                        for fk in table.foreign_keys)):
                found[table.name] = table
    return found


def _name(node):
    return getattr(node, 'attr', None) or getattr(node, 'id', None)


def _bare_calls(func):
    """The calls of ``func`` that run SQL outside any session.

    Not those on a session (``context.session.execute``): the receiver is
    a name or attribute holding ``session``.
    """
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and _name(node.func) in _BARE and not (
                isinstance(node.func, ast.Attribute) and
                'session' in (_name(node.func.value) or '')):
            yield _name(node.func), node


def _assigned(func, name):
    """What ``func`` assigns to ``name``; [] if also bound otherwise."""
    values = [n.value for n in ast.walk(func) if isinstance(n, ast.Assign)
              and any(isinstance(t, ast.Name) and t.id == name
                      for t in n.targets)]
    stores = [n for n in ast.walk(func) if isinstance(n, ast.Name) and
              n.id == name and isinstance(n.ctx, ast.Store)]
    params = [a.arg for a in ast.walk(func.args) if isinstance(a, ast.arg)]
    # A loop variable, a parameter, a tuple target: unknown, not a select.
    return values if len(stores) == len(values) and name not in params else []


def _is_select(expr, func, funcs, seen=frozenset()):
    """Whether ``expr`` is a select(), as far as the source shows it."""
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        if expr.func.attr in ('insert', 'update', 'delete'):
            return False
        if expr.func.attr == 'select':  # sa.select(...), table.select()
            return True
        expr = expr.func.value  # a chain: select(...).where(...).limit(...)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name):
        if expr.func.id == 'select' or expr.func.id in seen:
            return True
        # A function of the same module: a select if all it returns is.
        helper = funcs.get(expr.func.id)
        returns = [n.value for n in ast.walk(helper)
                   if isinstance(n, ast.Return) and n.value] if helper else []
        return bool(returns) and all(_is_select(
            r, helper, funcs, seen | {expr.func.id}) for r in returns)
    if isinstance(expr, ast.Name):
        key = (func.name, expr.id)
        if key in seen:  # select = select.where(...)
            return True
        values = _assigned(func, expr.id)
        return bool(values) and all(
            _is_select(v, func, funcs, seen | {key}) for v in values)
    return False


def _functions(tree):
    """(qualified name within its module, def) of every function."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield '%s.%s' % (node.name, item.name), item


def _tracked_in(func):
    """The tracked tables ``func`` names: a hint for who reads a failure."""
    names = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Attribute) and node.attr in (
                'reflect', 'tables', 'sorted_tables'):
            names.add('tables by name')
        elif isinstance(node, ast.Attribute):  # models.Instance
            for module in (models, api_models):
                names.add(getattr(getattr(module, node.attr, None),
                                  '__tablename__', None))
        elif isinstance(node, ast.Constant):  # 'instances'
            names.add(node.value)
    return sorted(n for n in names
                  if n in capture.TRACKED or n == 'tables by name')


@functools.cache
def _bare_functions():
    """{'nova.x.f': (whether it runs only selects, tracked tables named)}."""
    root = os.path.dirname(nova.__file__)
    found = {}
    for pattern in SOURCES:
        for path in sorted(glob.glob(os.path.join(root, pattern))):
            with open(path) as f:
                tree = ast.parse(f.read(), path)
            module = 'nova.' + os.path.relpath(path, root)[:-3].replace(
                os.sep, '.')
            defs = dict(_functions(tree))
            for name, func in defs.items():
                calls = list(_bare_calls(func))
                if calls and func.name != 'get_engine':  # not the accessor
                    found['%s.%s' % (module, name)] = (all(
                        c.args and _is_select(c.args[0], func, defs)
                        for kind, c in calls if kind in _EXECUTE),
                        _tracked_in(func))
    return found


class TestTableCoverage(base.TestCase):
    """Every table holding instance rows is tracked or known unlisted."""

    def test_tracked_columns_exist(self):
        # A renamed table or column would leave capture silently blind.
        tables = _instance_tables()
        for name, column in capture.TRACKED.items():
            self.assertIn(name, tables, 'TRACKED table gone from Nova')
            self.assertIn(column, tables[name].c.keys(), 'in %s' % name)

    def test_every_instance_table_known(self):
        self.assertEqual(set(), set(_instance_tables()) - set(
            capture.TRACKED) - set(NOT_LISTED),
            'Nova tables keyed by instance, neither in TRACKED nor in '
            'NOT_LISTED: does a server list show them?')

    def test_not_listed_current(self):
        self.assertEqual(set(), set(NOT_LISTED) - set(_instance_tables()),
                         'NOT_LISTED tables that Nova no longer has (or no '
                         'longer keys by instance)')
        self.assertEqual(set(), set(NOT_LISTED) & set(capture.TRACKED))


class TestBareConnections(base.TestCase):
    """Every statement Nova runs outside a session is known harmless."""

    def test_every_bare_function_known(self):
        self.assertEqual({}, {
            name: tracked for name, (_, tracked) in _bare_functions().items()
            if name not in KNOWN_BARE_WRITERS and
            name not in KNOWN_BARE_READERS},
            'Nova functions running statements outside a session, unseen '
            'by capture (with the tracked tables each names): list them '
            'once their writes are known to be seen some other way')

    def test_known_lists_current(self):
        found = _bare_functions()
        for known in (KNOWN_BARE_WRITERS, KNOWN_BARE_READERS):
            self.assertEqual(set(), set(known) - set(found),
                             'listed, but gone from Nova or no longer '
                             'running statements outside a session')
        self.assertEqual(set(), set(KNOWN_BARE_WRITERS) &
                         set(KNOWN_BARE_READERS))

    def test_readers_only_select(self):
        found = _bare_functions()
        self.assertEqual(set(), {
            name for name in KNOWN_BARE_READERS
            if name in found and not found[name][0]},
            'KNOWN_BARE_READERS running more than select()s: writers?')
