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
"""Installing nova_ext into a Nova 34 environment changes nothing of Nova's.

pip only upgrades what a requirement rejects; so every requirement of
nova_ext must already be met by the environment Nova 34 brings, and Nova
itself must not be a requirement at all. And what nova_ext imports is
required: a library Nova stops needing must not vanish from under it.
Nor does the installed product import its tests or the developer tools
(tools/nova-ext-tools), which are not installed with it.
"""

import ast
import importlib.metadata
import os
import sys

import fixtures
from packaging import requirements
from packaging import utils

from nova_ext.tests.unit import base

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))

# Imported by the product but deliberately not in requirements.txt:
# {top-level module: (the only directory that may import it, why)}.
NOT_REQUIRED = {
    'nova': ('nova_ext', 'the host nova_ext is installed into'),
    'searchlightclient': (
        os.path.join('nova_ext', 'instance_list'),
        'optional, installed with --no-deps (see requirements.txt)'),
}
#: What no module of the product (nova_ext outside nova_ext/tests/) may
#: import: the tests, and the developer tools' package.
NOT_IMPORTED = ('nova_ext.tests', 'nova_ext_tools')


def _requirements(name):
    with open(os.path.join(ROOT, name)) as f:
        for line in f:
            line = line.split('#', 1)[0].strip()
            if line:
                yield requirements.Requirement(line)


def _imported(tree):
    """Every module an AST imports, by its full dotted name.

    Absolute imports at any depth (inside functions too), each name of a
    ``from package import name`` (it may be a module), and the string
    arguments of ``importlib.import_module`` and ``__import__``.
    """
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            yield node.module
            yield from ('%s.%s' % (node.module, alias.name)
                        for alias in node.names)
        elif (isinstance(node, ast.Call) and node.args and
                isinstance(node.args[0], ast.Constant) and
                isinstance(node.args[0].value, str) and
                getattr(node.func, 'attr',
                        getattr(node.func, 'id', None)) in (
                            'import_module', '__import__')):
            yield node.args[0].value


def _product_modules(root=ROOT):
    """``{file relative to root: [module imported]}`` of the product.

    Every module under nova_ext/ outside nova_ext/tests/.
    """
    found = {}
    for top, dirs, files in os.walk(os.path.join(root, 'nova_ext')):
        dirs[:] = [d for d in dirs if d != 'tests' and
                   not d.startswith(('.', '__'))]
        for name in files:
            if not name.endswith('.py'):
                continue
            path = os.path.join(top, name)
            with open(path) as f:
                tree = ast.parse(f.read(), path)
            found[os.path.relpath(path, root)] = list(_imported(tree))
    return found


def _product_imports():
    """``{top-level module: [file]}`` of the libraries nova_ext imports.

    Outside nova_ext itself and the standard library.
    """
    found = {}
    for path, modules in _product_modules().items():
        for module in modules:
            module = module.split('.', 1)[0]
            if (module != 'nova_ext' and
                    module not in sys.stdlib_module_names):
                paths = found.setdefault(module, [])
                if path not in paths:
                    paths.append(path)
    return found


def _forbidden_imports(root=ROOT):
    """``['file: module']`` of the product's imports in NOT_IMPORTED."""
    return sorted(
        '%s: %s' % (path, module)
        for path, modules in _product_modules(root).items()
        for module in modules
        if any(module == name or module.startswith(name + '.')
               for name in NOT_IMPORTED))


class TestRequirements(base.TestCase):

    def test_every_imported_library_is_required(self):
        required = {utils.canonicalize_name(r.name)
                    for r in _requirements('requirements.txt')}
        distributions = importlib.metadata.packages_distributions()
        imports = _product_imports()
        # The scan finds what nova_ext is known to import.
        self.assertIn('oslo_upgradecheck', imports)
        self.assertIn('prettytable', imports)
        missing = []
        for module, paths in sorted(imports.items()):
            if module in NOT_REQUIRED:
                allowed = NOT_REQUIRED[module][0] + os.sep
                self.assertEqual([], [p for p in paths
                                      if not p.startswith(allowed)],
                                 '%s may only be imported under %s'
                                 % (module, allowed))
                continue
            names = {utils.canonicalize_name(d)
                     for d in distributions.get(module, ())}
            if not names & required:
                missing.append('%s (from %s, imported by %s)' % (
                    module, ', '.join(sorted(names)) or 'not installed',
                    paths[0]))
        self.assertEqual([], missing,
                         'imported but not in requirements.txt')

    def test_the_product_imports_no_tests_and_no_tools(self):
        # The scan sees the product's imports of its own modules.
        imported = {module for modules in _product_modules().values()
                    for module in modules}
        self.assertIn('nova_ext.conf', imported)
        self.assertEqual([], _forbidden_imports())

    def test_a_forbidden_import_is_found(self):
        root = self.useFixture(fixtures.TempDir()).path
        product = os.path.join(root, 'nova_ext', 'cmd')
        os.makedirs(product)
        os.makedirs(os.path.join(root, 'nova_ext', 'tests'))
        sources = {
            os.path.join(product, 'a.py'):
                'from nova_ext.tests.functional import fixtures\n',
            os.path.join(product, 'b.py'):
                'def main():\n    from nova_ext import tests\n',
            os.path.join(product, 'c.py'):
                'import importlib\n'
                "importlib.import_module('nova_ext_tools.cmd.bench')\n",
            os.path.join(product, 'd.py'):
                'from nova_ext import conf\n',
            # The tests may import themselves.
            os.path.join(root, 'nova_ext', 'tests', 'e.py'):
                'from nova_ext.tests import fixtures\n',
        }
        for path, text in sources.items():
            with open(path, 'w') as f:
                f.write(text)
        self.assertEqual(
            [os.path.join('nova_ext', 'cmd', 'a.py') +
             ': nova_ext.tests.functional',
             os.path.join('nova_ext', 'cmd', 'a.py') +
             ': nova_ext.tests.functional.fixtures',
             os.path.join('nova_ext', 'cmd', 'b.py') + ': nova_ext.tests',
             os.path.join('nova_ext', 'cmd', 'c.py') +
             ': nova_ext_tools.cmd.bench'],
            _forbidden_imports(root))

    def test_lower_bounds_are_novas(self):
        nova = {}
        for line in importlib.metadata.requires('nova'):
            req = requirements.Requirement(line)
            if req.marker is None:
                nova[utils.canonicalize_name(req.name)] = req.specifier
        for req in _requirements('requirements.txt'):
            name = utils.canonicalize_name(req.name)
            if name in nova:
                self.assertEqual(
                    {s for s in nova[name] if s.operator == '>='},
                    {s for s in req.specifier if s.operator == '>='},
                    '%s: Nova 34 requires %s' % (req.name, nova[name]))

    def test_nova_is_not_a_requirement(self):
        names = {utils.canonicalize_name(r.name)
                 for r in _requirements('requirements.txt')}
        self.assertNotIn('nova', names)
        self.assertNotIn('openstack-placement', names)

    def test_nova_environment_already_satisfies_every_requirement(self):
        for req in _requirements('requirements.txt'):
            installed = importlib.metadata.version(req.name)
            self.assertTrue(req.specifier.contains(installed,
                                                   prereleases=True),
                            '%s is installed at %s' % (req, installed))

    def test_constraints_pin_nova_and_sqlalchemy_2_0(self):
        pins = {}
        with open(os.path.join(ROOT, 'upper-constraints.txt')) as f:
            for line in f:
                if '===' in line and not line.startswith('#'):
                    name, version = line.strip().split('===')
                    pins[utils.canonicalize_name(name)] = version
        self.assertTrue(pins['nova'].startswith('34.'))
        self.assertTrue(pins['openstack-placement'].startswith('16.'))
        self.assertTrue(pins['sqlalchemy'].startswith('2.0.'))
        self.assertEqual(pins['sqlalchemy'],
                         importlib.metadata.version('sqlalchemy'))
