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
"""Fixtures shared by unit and functional tests."""

import importlib
import logging
import os
import sys

import fixtures
from oslo_config import cfg
from oslo_db.sqlalchemy import enginefacade
from oslo_db.sqlalchemy import test_fixtures
from oslo_log import log
from packaging import specifiers

# Test plugins, by namespace, as a third party would install them.
TEST_ENTRY_POINTS = {
    'nova_ext.api.handlers': {
        'test-recorder': 'nova_ext.tests.plugins:RecordingHandler',
        'test-failing': 'nova_ext.tests.plugins:FailingHandler',
    },
    'nova_ext.notifications.consumers': {
        'test-recorder': 'nova_ext.tests.plugins:RecordingConsumer',
        'test-failing': 'nova_ext.tests.plugins:FailingConsumer',
    },
    'nova_ext.scheduler.request_filters': {
        'test-forbid-trait': 'nova_ext.tests.plugins:ForbidTestTrait',
        'test-not-a-filter': 'nova_ext.tests.plugins:NotAPlugin',
        'test-broken': 'nova_ext.tests.no_such_module:Nothing',
    },
    'nova_ext.virt.trait_callbacks': {
        'test-disabled': 'nova_ext.tests.plugins:DisabledTraitCallback',
    },
    'nova_ext.object_migrations': {
        'test-noop': 'nova_ext.tests.plugins:CountingMigration',
    },
    'nova_ext.instance_list.drivers': {
        'test-broken': 'nova_ext.tests.plugins:no_such_attribute',
    },
}


class InMemoryDatabase(fixtures.Fixture):
    """An empty SQLite database in place of one of Nova's.

    As Nova's own Database fixture puts one, with ``tables`` of
    ``metadata`` created.

    :param context_manager: Nova's transaction context to replace
        (``nova.db.api.api.context_manager``, ``nova.db.main.api``'s).
    :param tables: the tables to create; all of ``metadata`` by default.
    """

    def __init__(self, context_manager, metadata, tables=None):
        super().__init__()
        self.context_manager = context_manager
        self.metadata = metadata
        self.tables = tables

    def _setUp(self):
        facade = enginefacade.transaction_context()
        facade.configure(connection='sqlite://')
        self.useFixture(test_fixtures.ReplaceEngineFacadeFixture(
            self.context_manager, facade))
        self.engine = self.context_manager.writer.get_engine()
        self.metadata.create_all(self.engine, tables=self.tables)


class UntestedNova(fixtures.Fixture):
    """``nova_ext.compat.TESTED_NOVA`` names no release: every gate refuses."""

    def _setUp(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova_ext.compat.TESTED_NOVA',
            specifiers.SpecifierSet('>=99.0.0')))


class EntryPointsFixture(fixtures.Fixture):
    """Installs a distribution with the given entry points for the test.

    It is a real .dist-info directory on sys.path, found by
    importlib.metadata and stevedore exactly as an installed package is.
    """

    def __init__(self, entry_points=None, name='nova-ext-test-plugins'):
        super().__init__()
        self.entry_points = (TEST_ENTRY_POINTS if entry_points is None
                             else entry_points)
        self.name = name

    def _setUp(self):
        root = self.useFixture(fixtures.TempDir()).path
        dist_info = os.path.join(
            root, '%s-1.0.dist-info' % self.name.replace('-', '_'))
        os.mkdir(dist_info)
        with open(os.path.join(dist_info, 'METADATA'), 'w') as f:
            f.write('Metadata-Version: 2.1\nName: %s\nVersion: 1.0\n'
                    % self.name)
        with open(os.path.join(dist_info, 'entry_points.txt'), 'w') as f:
            for group, entries in sorted(self.entry_points.items()):
                f.write('[%s]\n' % group)
                for name, value in sorted(entries.items()):
                    f.write('%s = %s\n' % (name, value))
                f.write('\n')
        self.useFixture(fixtures.MonkeyPatch('sys.path', [root] + sys.path))
        importlib.invalidate_caches()
        # stevedore keeps, per process, the entry points of each namespace
        # it has listed once; the test's plugins must not be hidden by a
        # listing made before, nor stay visible after.
        self.useFixture(fixtures.MonkeyPatch(
            'stevedore.extension.ExtensionManager.ENTRY_POINT_CACHE', {}))


class LoggingNotSetUp(fixtures.Fixture):
    """The process's logging as a Nova command has it before its setup.

    As ``nova.config.parse_args`` leaves it: the root logger at WARNING,
    with the one temporary stderr handler of oslo.log's
    ``register_options``. :meth:`setup` then sets logging up as the command
    does next, with oslo.log's ``setup``. The root logger's handlers and
    level and ``sys.excepthook`` are given back at cleanup.
    """

    def _setUp(self):
        root = logging.getLogger()
        handlers, level = list(root.handlers), root.level
        self.addCleanup(self._restore, root, handlers, level)
        self.useFixture(fixtures.MonkeyPatch('sys.excepthook',
                                             sys.excepthook))
        del root.handlers[:]
        root.setLevel(logging.WARNING)
        self.conf = cfg.ConfigOpts()
        log.register_options(self.conf)
        self.conf([])
        # Nova's library levels would outlive the test.
        self.conf.set_override('default_log_levels', [])
        self.dir = self.useFixture(fixtures.TempDir()).path

    @staticmethod
    def _restore(root, handlers, level):
        for handler in root.handlers:
            if handler not in handlers:
                handler.close()
        root.handlers[:] = handlers
        root.setLevel(level)

    def setup(self):
        """oslo.log's setup with a log file; returns the file's path."""
        path = os.path.join(self.dir, 'service.log')
        self.conf.set_override('log_file', path)
        log.setup(self.conf, 'nova')
        return path
