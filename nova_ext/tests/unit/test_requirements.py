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
"""

import ast
import importlib.metadata
import os
import sys

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
    'testtools': (
        os.path.join('nova_ext', 'demo'),
        "the demo's cloud is Nova's functional harness, run by tox with "
        'the test requirements'),
}


def _requirements(name):
    with open(os.path.join(ROOT, name)) as f:
        for line in f:
            line = line.split('#', 1)[0].strip()
            if line:
                yield requirements.Requirement(line)


def _product_imports():
    """``{top-level module: [file]}`` of what nova_ext's code imports.

    Every absolute import, at any depth (imports inside functions too),
    of every module outside nova_ext/tests/ and the standard library.
    """
    found = {}
    for top, dirs, files in os.walk(os.path.join(ROOT, 'nova_ext')):
        dirs[:] = [d for d in dirs if d != 'tests' and
                   not d.startswith(('.', '__'))]
        for name in files:
            if not name.endswith('.py'):
                continue
            path = os.path.join(top, name)
            with open(path) as f:
                tree = ast.parse(f.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    module = module.split('.', 1)[0]
                    if (module != 'nova_ext' and
                            module not in sys.stdlib_module_names):
                        found.setdefault(module, []).append(
                            os.path.relpath(path, ROOT))
    return found


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
