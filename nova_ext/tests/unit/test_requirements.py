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
itself must not be a requirement at all.
"""

import importlib.metadata
import os

from packaging import requirements
from packaging import utils

from nova_ext.tests.unit import base

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def _requirements(name):
    with open(os.path.join(ROOT, name)) as f:
        for line in f:
            line = line.split('#', 1)[0].strip()
            if line:
                yield requirements.Requirement(line)


class TestRequirements(base.TestCase):

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
