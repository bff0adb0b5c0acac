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
"""What nova_ext relies on of the RequestSpecs Nova stores.

``nova_ext.seams.internals.request_specs`` reads the
``request_specs`` table of the API database and decodes the JSON Nova
stores there: these tests store real RequestSpecs with Nova's own objects
and fail when what nova_ext decodes is not what Nova's objects read back.
"""

from nova import context as nova_context
from nova.db.api import api as api_db_api
from nova.db.api import models as api_models
from nova import objects
from oslo_serialization import jsonutils
from oslo_utils import uuidutils
from oslo_versionedobjects import exception as ovo_exception

from nova_ext import exception
from nova_ext.seams.internals import request_specs
from nova_ext.tests import fixtures as ext_fixtures
from nova_ext.tests.unit import base

SPECS = api_models.RequestSpec.__table__


class TestStoredSpecs(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(ext_fixtures.InMemoryDatabase(
            api_db_api.context_manager, api_models.BASE.metadata,
            tables=[SPECS]))
        objects.register_all()
        self.ctx = nova_context.get_admin_context()

    def _spec(self, availability_zone='az1', hints=None, group=None):
        """A RequestSpec as nova-api makes it for a new server."""
        flavor = objects.Flavor(
            id=1, flavorid='f1', name='m1', memory_mb=512, vcpus=1,
            root_gb=1, ephemeral_gb=0, swap=0, extra_specs={},
            rxtx_factor=1.0, vcpu_weight=0, disabled=False,
            is_public=True, description=None)
        image = objects.ImageMeta.from_dict(
            {'id': uuidutils.generate_uuid(), 'properties': {}})
        filter_properties = {'scheduler_hints': hints or {}}
        return objects.RequestSpec.from_components(
            self.ctx, uuidutils.generate_uuid(), image, flavor, None, None,
            filter_properties, group, availability_zone,
            project_id='p1', user_id='u1')

    def test_decodes_what_novas_objects_read(self):
        for zone, hints in (('az1', {'a': ['1', '2'], 'b': ['x']}),
                            (None, {}), ('az2', None)):
            spec = self._spec(zone, hints)
            spec.create()
            [(uuid, stored)] = request_specs.stored(self.ctx,
                                                    [spec.instance_uuid])
            self.assertEqual(spec.instance_uuid, uuid)
            [nova] = objects.RequestSpec.get_by_instance_uuids(
                self.ctx, [uuid])
            self.assertEqual((nova.availability_zone, nova.scheduler_hints),
                             request_specs.decode(stored))

    def test_a_spec_with_a_group_is_novas(self):
        # Nova reads the group again and may drop the group hint.
        group = objects.InstanceGroup(uuid=uuidutils.generate_uuid(),
                                      name='g', policy='anti-affinity',
                                      members=[], hosts=[])
        spec = self._spec(hints={'group': [group.uuid]}, group=group)
        self.assertIsNone(request_specs.decode(
            spec._get_update_primitives()['spec']))

    def test_a_spec_novas_loader_refuses_is_refused(self):
        # As Nova's list fails on it (its view loads every spec), decode
        # raises what Nova's build raises.
        def newer(data):
            data['nova_object.version'] = '99.0'

        def mistyped(data):
            data['nova_object.data']['scheduler_hints'] = 'not a dict'
        for change, error in ((newer, ovo_exception.IncompatibleObjectVersion),
                              (mistyped, AttributeError)):
            spec = self._spec()
            spec.create()
            data = jsonutils.loads(spec._get_update_primitives()['spec'])
            change(data)
            self._store(spec.instance_uuid, jsonutils.dumps(data))
            [(_, stored)] = request_specs.stored(self.ctx,
                                                 [spec.instance_uuid])
            nova = self.assertRaises(
                error, objects.RequestSpec.get_by_instance_uuids,
                self.ctx, [spec.instance_uuid])
            ours = self.assertRaises(error, request_specs.decode, stored)
            self.assertIs(type(nova), type(ours), change.__name__)

    def _store(self, uuid, text):
        @api_db_api.context_manager.writer
        def _write(context):
            context.session.execute(SPECS.update().where(
                SPECS.c.instance_uuid == uuid).values(spec=text))
        _write(self.ctx)

    def test_stored_reads_only_the_asked(self):
        specs = [self._spec() for _ in range(3)]
        for spec in specs:
            spec.create()
        asked = [specs[0].instance_uuid, specs[2].instance_uuid,
                 uuidutils.generate_uuid()]
        self.assertEqual(sorted(asked[:2]), sorted(
            uuid for uuid, _ in request_specs.stored(self.ctx, asked)))

    def test_sqlite_has_no_digests(self):
        # Its specs are read whole and digested by the caller; the digests
        # of MariaDB and PostgreSQL are checked on them (test_index_backends).
        self._spec().create()
        self.assertIsNone(request_specs.digests(self.ctx, ['x']))
        self.assertIsNone(request_specs.stored_with_digests(self.ctx, ['x']))
        self.assertIsNone(request_specs.combined(self.ctx, ['x']))

    def test_combine_as_the_database_does(self):
        # MariaDB's BIT_XOR of each half of the 128 first bits
        # (test_index_backends compares the two).
        a, b = '0f' * 32, 'f1' * 16 + '00' * 16
        self.assertEqual((2, 0x0f0f0f0f0f0f0f0f ^ 0xf1f1f1f1f1f1f1f1,
                          0x0f0f0f0f0f0f0f0f ^ 0xf1f1f1f1f1f1f1f1),
                         request_specs.combine([('u1', a), ('u2', b)]))
        self.assertEqual((0, 0, 0), request_specs.combine([]))
        self.assertIsNone(request_specs.combine([('u1', a), ('u2', None)]))


class TestVersionGate(base.TestCase):

    def test_refuses_on_an_untested_nova(self):
        self.useFixture(ext_fixtures.UntestedNova())
        self.assertRaises(exception.UnsupportedNovaVersion,
                          request_specs.stored, None, ['u1'])
        self.assertRaises(exception.UnsupportedNovaVersion,
                          request_specs.combined, None, ['u1'])
        self.assertRaises(exception.UnsupportedNovaVersion,
                          request_specs.decode, '{}')

    def test_the_installed_nova_is_tested(self):
        request_specs._check()
