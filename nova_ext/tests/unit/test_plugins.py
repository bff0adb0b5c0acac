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
from nova_ext.api import base as api_base
from nova_ext import exception
from nova_ext import instance_list
from nova_ext.instance_list import cells
from nova_ext import object_migrations
from nova_ext import plugins
from nova_ext import scheduler
from nova_ext.scheduler import base as scheduler_base
from nova_ext.tests import fixtures as ext_fixtures
from nova_ext.tests import plugins as test_plugins
from nova_ext.tests.unit import base
from nova_ext import virt


class TestLoadOne(base.TestCase):

    def test_default_driver_is_nova_path(self):
        driver = instance_list.load_driver(self.conf.conf)
        self.assertIsInstance(driver, cells.CellsDriver)

    def test_missing_driver_names_it(self):
        self.flags(driver='nope', group='nova_ext_instance_list')
        e = self.assertRaises(exception.PluginNotFound,
                              instance_list.load_driver, self.conf.conf)
        self.assertIn("'nope'", str(e))
        self.assertIn('nova_ext.instance_list.drivers', str(e))

    def test_broken_driver_names_entry_point_and_cause(self):
        self.install_test_plugins()
        self.flags(driver='test-broken', group='nova_ext_instance_list')
        e = self.assertRaises(exception.PluginLoadFailed,
                              instance_list.load_driver, self.conf.conf)
        self.assertIn("'test-broken'", str(e))
        self.assertIn('nova_ext.tests.plugins:no_such_attribute', str(e))
        self.assertIn('AttributeError', str(e))


class TestLoadMany(base.TestCase):

    def setUp(self):
        super().setUp()
        self.install_test_plugins()

    def test_disabled_by_default_and_imports_nothing(self):
        self.assertEqual([], scheduler.load_request_filters(self.conf.conf))
        self.assertEqual([], virt.load_trait_callbacks(self.conf.conf))
        self.assertEqual([], object_migrations.load_migrations(
            self.conf.conf))

    def test_good_entry_points_are_instances_in_order(self):
        self.flags(request_filters=['test-forbid-trait'],
                   group='nova_ext_scheduler')
        self.flags(trait_callbacks=['test-disabled'],
                   group='nova_ext_compute_status')
        self.flags(migrations=['test-noop'],
                   group='nova_ext_object_migrations')
        [(name, plugin)] = scheduler.load_request_filters(self.conf.conf)
        self.assertEqual('test-forbid-trait', name)
        self.assertIsInstance(plugin, test_plugins.ForbidTestTrait)
        [(_, callback)] = virt.load_trait_callbacks(self.conf.conf)
        self.assertIsInstance(callback, test_plugins.DisabledTraitCallback)
        [(_, migration)] = object_migrations.load_migrations(self.conf.conf)
        self.assertEqual((0, 0), migration(None, 50))

    def test_missing_entry_points_all_named(self):
        self.flags(request_filters=['test-forbid-trait', 'gone', 'lost'],
                   group='nova_ext_scheduler')
        e = self.assertRaises(exception.PluginNotFound,
                              scheduler.load_request_filters, self.conf.conf)
        self.assertEqual(['gone', 'lost'], e.names)

    def test_broken_entry_point(self):
        self.flags(request_filters=['test-broken'],
                   group='nova_ext_scheduler')
        e = self.assertRaises(exception.PluginLoadFailed,
                              scheduler.load_request_filters, self.conf.conf)
        self.assertEqual('test-broken', e.entry_point.name)
        self.assertIsInstance(e.error, ImportError)

    def test_wrong_kind_of_object(self):
        self.flags(request_filters=['test-not-a-filter'],
                   group='nova_ext_scheduler')
        e = self.assertRaises(exception.PluginTypeError,
                              scheduler.load_request_filters, self.conf.conf)
        self.assertIn('RequestFilter', str(e))

    def test_listed_twice(self):
        self.flags(request_filters=['test-forbid-trait'] * 2,
                   group='nova_ext_scheduler')
        self.assertRaises(exception.NovaExtError,
                          scheduler.load_request_filters, self.conf.conf)

    def test_abstract_contract_cannot_be_skipped(self):
        class Incomplete(scheduler_base.RequestFilter):
            pass
        self.assertRaises(TypeError, Incomplete)


SWITCHED = 'nova_ext.tests.switched'


class SwitchedOn(api_base.Handler):
    """A handler whose capability is always on."""

    @classmethod
    def enabled(cls, conf):
        return True

    def __call__(self, request, application):
        return request.get_response(application)


class TestLoadSwitched(base.TestCase):

    def setUp(self):
        super().setUp()
        self.install_test_plugins()

    def test_off_unless_listed(self):
        self.assertEqual([], plugins.load_switched(
            'nova_ext.api.handlers', object, self.conf.conf, []))
        [(name, handler)] = plugins.load_switched(
            'nova_ext.api.handlers', object, self.conf.conf,
            ['test-recorder'])
        self.assertEqual('test-recorder', name)
        self.assertIsInstance(handler, test_plugins.RecordingHandler)

    def test_listed_but_not_installed(self):
        self.assertRaises(exception.PluginNotFound, plugins.load_switched,
                          'nova_ext.api.handlers', object, self.conf.conf,
                          ['nope'])

    def _install(self, entry_points):
        self.useFixture(ext_fixtures.EntryPointsFixture(
            {SWITCHED: entry_points}, name='nova-ext-test-switched'))

    def test_switched_on_by_its_capability(self):
        self._install({'b-on': 'nova_ext.tests.unit.test_plugins:SwitchedOn',
                       'a-off': 'nova_ext.tests.plugins:RecordingHandler'})
        loaded = plugins.load_switched(SWITCHED, api_base.Handler,
                                       self.conf.conf, [])
        self.assertEqual(['b-on'], [name for name, _ in loaded])
        self.assertIsInstance(loaded[0][1], SwitchedOn)
        loaded = plugins.load_switched(SWITCHED, api_base.Handler,
                                       self.conf.conf, ['a-off'])
        self.assertEqual(['a-off', 'b-on'], [name for name, _ in loaded])

    def test_every_installed_plugin_is_checked(self):
        self._install({'good': 'nova_ext.tests.plugins:RecordingHandler',
                       'wrong': 'nova_ext.tests.plugins:NotAPlugin'})
        e = self.assertRaises(exception.PluginTypeError,
                              plugins.load_switched, SWITCHED,
                              api_base.Handler, self.conf.conf, [])
        self.assertIn("'wrong'", str(e))
        self.assertIn(SWITCHED, str(e))

    def test_broken_installed_plugin(self):
        self._install({'broken': 'nova_ext.tests.no_such_module:Nothing'})
        e = self.assertRaises(exception.PluginLoadFailed,
                              plugins.load_switched, SWITCHED,
                              api_base.Handler, self.conf.conf, [])
        self.assertEqual('broken', e.entry_point.name)
        self.assertIsInstance(e.error, ImportError)

    def test_defined_twice(self):
        self._install({'twice': 'nova_ext.tests.plugins:RecordingHandler'})
        self.useFixture(ext_fixtures.EntryPointsFixture(
            {SWITCHED: {'twice': 'nova_ext.tests.unit.test_plugins:'
                                 'SwitchedOn'}},
            name='nova-ext-test-switched-again'))
        e = self.assertRaises(exception.NovaExtError, plugins.load_switched,
                              SWITCHED, api_base.Handler, self.conf.conf, [])
        self.assertIn("'twice' is defined more than once", str(e))

    def test_available_does_not_import(self):
        # test-broken fails on import; listing it must not import it.
        names = plugins.available('nova_ext.scheduler.request_filters')
        self.assertEqual(sorted(names), names)
        self.assertLessEqual(
            {'test-broken', 'test-forbid-trait', 'test-not-a-filter',
             'compute-disabled', 'compute-down'}, set(names))
