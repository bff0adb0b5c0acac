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
"""Contract: Nova's _SchemaValidator, its validator classes made once."""

import inspect
import re
import threading

from nova.api.openstack.compute.schemas import servers as server_schemas
from nova.api import validation as nova_validation
from nova.api.validation import validators as nova_validators

from nova_ext.seams.internals import schema_validator
from nova_ext.tests import fixtures as ext_fixtures
from nova_ext.tests.unit import base


def _code(function):
    return re.sub(r'\s+', '', inspect.getsource(function))


#: Nova's schemas of a server list's query, and of a create's body.
QUERIES = (server_schemas.index_query, server_schemas.index_query_v226,
           server_schemas.index_query_v266, server_schemas.index_query_v273,
           server_schemas.index_query_v275)
#: Queries as Nova's decorator hands them (``GET.dict_of_lists()``):
#: accepted, and refused by each kind of check Nova's schemas make.
QUERY_INPUTS = (
    {}, {'limit': ['10']}, {'limit': ['-1']}, {'limit': ['1.5']},
    {'limit': ['ten']}, {'limit': ['1', '2']}, {'all_tenants': ['1']},
    {'unknown': ['x']}, {'changes-since': ['2026-12-05T10:00:00Z']},
    {'changes-since': ['yesterday']}, {'sort_key': ['display_name']},
    {'sort_key': ['no-such-key']}, {'sort_dir': ['sideways']},
    {'locked': ['maybe']}, {'tags': ['a,b']}, {'ip': ['10.0.0.1']},
    {'deleted': ['true'], 'host': ['h1']})
BODIES = (
    {'server': {'name': 'a', 'flavorRef': '1', 'imageRef': 'x'}},
    {'server': {'name': '', 'flavorRef': '1'}},
    {'server': {'name': 'a' * 256, 'flavorRef': '1'}},
    {'server': {'name': 'a', 'flavorRef': '1', 'min_count': '0'}},
    {'server': {'name': 'a', 'flavorRef': '1', 'max_count': 'x'}},
    {'server': {'name': 'a', 'flavorRef': '1', 'bogus': 1}},
    {'server': {'name': 'a', 'flavorRef': '1',
                'networks': [{'uuid': 'not-a-uuid'}]}},
    {})


def _outcome(validator, target):
    """What checking ``target`` gives: None, or the error's class and text."""
    try:
        validator.validate(target)
    except Exception as e:
        return type(e).__name__, str(e)
    return None


class TestSchemaValidator(base.TestCase):

    def setUp(self):
        super().setUp()
        # Nova's class, whatever another test of the process attached.
        schema_validator.detach()
        self.addCleanup(schema_validator.detach)
        self.novas = nova_validators._SchemaValidator

    def test_nova_makes_a_validator_class_per_check(self):
        # What the seam saves, and what it must make alike.
        init = self.novas.__init__
        self.assertEqual(
            ['self', 'schema', 'relax_additional_properties', 'is_body'],
            list(inspect.signature(init).parameters))
        self.assertIn('jsonschema.validators.extend(self.validator_org,',
                      _code(init))
        made = self.novas(server_schemas.index_query, True, False)
        self.assertEqual({'is_body', 'validator'}, set(vars(made)))
        again = self.novas(server_schemas.index_query, True, False)
        self.assertIsNot(type(made.validator), type(again.validator))
        # Nova's checks look the class up in its module when they run.
        helper = _code(nova_validation._schema_validation_helper)
        self.assertIn('validators._SchemaValidator(', helper)

    def test_attach_replaces_and_detach_restores(self):
        self.assertTrue(schema_validator.attach())
        ours = nova_validators._SchemaValidator
        self.assertTrue(issubclass(ours, self.novas))
        self.assertTrue(schema_validator.attach())
        self.assertIs(ours, nova_validators._SchemaValidator)
        schema_validator.detach()
        self.assertIs(self.novas, nova_validators._SchemaValidator)

    def test_classes_are_reused_within_only(self):
        schema_validator.attach()
        ours = nova_validators._SchemaValidator
        outside = [ours(server_schemas.index_query, True, False)
                   for _ in range(2)]
        self.assertIsNot(type(outside[0].validator),
                         type(outside[1].validator))
        with schema_validator.reusing():
            within = [ours(schema, True, False) for schema in QUERIES]
            bodies = [ours(server_schemas.create) for _ in range(2)]
        self.assertEqual(1, len({type(v.validator) for v in within}))
        self.assertIs(type(bodies[0].validator), type(bodies[1].validator))
        self.assertIsNot(type(within[0].validator),
                         type(bodies[0].validator))
        for made in within + bodies:
            self.assertEqual({'is_body', 'validator'}, set(vars(made)))
        self.assertFalse(within[0].is_body)
        self.assertTrue(bodies[0].is_body)

    def test_another_threads_checks_are_novas(self):
        schema_validator.attach()
        ours = nova_validators._SchemaValidator
        made = {}

        def other():
            made['other'] = [ours(server_schemas.index_query, True, False)
                             for _ in range(2)]
        with schema_validator.reusing():
            thread = threading.Thread(target=other)
            thread.start()
            thread.join()
        first, second = made['other']
        self.assertIsNot(type(first.validator), type(second.validator))

    def test_each_check_answers_as_novas(self):
        schema_validator.attach()
        ours = nova_validators._SchemaValidator
        compared = 0
        with schema_validator.reusing():
            # A legacy v2 query's check relaxes additionalProperties.
            for relax in (False, True):
                for schema in QUERIES:
                    for target in QUERY_INPUTS:
                        want = _outcome(self.novas(schema, relax, False),
                                        target)
                        got = _outcome(ours(schema, relax, False), target)
                        self.assertEqual(want, got, (relax, schema, target))
                        compared += want is not None
            for target in BODIES:
                want = _outcome(self.novas(server_schemas.create), target)
                got = _outcome(ours(server_schemas.create), target)
                self.assertEqual(want, got, target)
                compared += want is not None
        # Refusals were compared, not only acceptances.
        self.assertGreater(compared, 20)

    def test_refused_on_untested_nova(self):
        self.useFixture(ext_fixtures.UntestedNova())
        self.assertFalse(schema_validator.attach())
        self.assertIs(self.novas, nova_validators._SchemaValidator)
