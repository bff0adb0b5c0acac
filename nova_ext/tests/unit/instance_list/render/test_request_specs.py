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
"""The two request spec fields a server list shows, read lightly."""

import hashlib

import fixtures
from nova import objects
from oslo_serialization import jsonutils

from nova_ext.index.apply import writer
from nova_ext.instance_list import base as list_base
from nova_ext.instance_list.render import request_specs
from nova_ext.tests.unit import base


def _spec(zone, hints=None, group=None):
    """A stored spec: a RequestSpec as Nova serialises it."""
    objects.register_all()
    spec = objects.RequestSpec(availability_zone=zone,
                               scheduler_hints=hints or {})
    if group:
        spec.instance_group = objects.InstanceGroup(**group)
    return jsonutils.dumps(spec.obj_to_primitive())


def _unloadable(zone):
    """A stored spec of a RequestSpec version Nova does not know."""
    primitive = jsonutils.loads(_spec(zone))
    primitive['nova_object.version'] = '99.0'
    return jsonutils.dumps(primitive)


class TestRequestSpecs(base.TestCase):

    def setUp(self):
        super().setUp()
        request_specs.reset()
        self.addCleanup(request_specs.reset)
        self.stored = {}
        self.texts_read = []
        self.useFixture(fixtures.MockPatchObject(
            request_specs.stored_specs, 'stored', self._stored))
        self.digests_read = 0
        self.useFixture(fixtures.MockPatchObject(
            request_specs.stored_specs, 'digests', self._digests))
        self.useFixture(fixtures.MockPatchObject(
            request_specs.stored_specs, 'combined', self._combined))
        self.useFixture(fixtures.MockPatchObject(
            request_specs.stored_specs, 'stored_with_digests',
            lambda ctx, uuids: [(u, spec, self._sha(u, spec))
                                for u, spec in self._stored(ctx, uuids)]))
        self.decode = self.useFixture(fixtures.MockPatchObject(
            request_specs, '_decode', side_effect=request_specs._decode)).mock
        self.built = self.useFixture(fixtures.MockPatchObject(
            request_specs.objects.RequestSpec, 'get_by_instance_uuids',
            return_value=['built'])).mock

    #: Whether the database digests the specs (not SQLite).
    DIGESTS = False
    #: Whether it combines them (MySQL, MariaDB).
    COMBINES = False

    def _sha(self, uuid, spec):
        return hashlib.sha256(spec.encode('utf-8')).hexdigest()

    def _stored(self, ctx, uuids):
        self.texts_read.extend(uuids)
        return [(u, self.stored[u]) for u in uuids if u in self.stored]

    def _digests(self, ctx, uuids):
        if not self.DIGESTS:
            return None
        self.digests_read += 1
        return [(u, self._sha(u, self.stored[u])) for u in uuids]

    def _combined(self, ctx, uuids):
        if not self.COMBINES:
            return None
        return request_specs.stored_specs.combine(
            [(u, self._sha(u, self.stored[u])) for u in uuids])

    def zones(self, *uuids):
        return [getattr(spec, 'availability_zone', spec) for spec in
                request_specs.get_by_instance_uuids(None, list(uuids))]

    def test_decoded_again_only_when_the_stored_spec_changes(self):
        self.stored = {'a': _spec('az1'), 'b': _spec('az2', {'x': ['1']})}
        self.assertEqual(['az1', 'az2'], self.zones('a', 'b'))
        self.assertEqual(['az1', 'az2'], self.zones('a', 'b'))
        self.assertEqual(2, self.decode.call_count)
        self.stored['a'] = _spec('az3')
        self.assertEqual(['az3', 'az2'], self.zones('a', 'b'))
        self.assertEqual(3, self.decode.call_count)

    def test_specs_nova_must_build_stay_nova_built(self):
        self.stored = {'a': _spec('az1', group={'name': 'g'}),
                       'b': _spec(None)}
        self.assertEqual([None, 'built'], self.zones('a', 'b'))
        self.assertEqual([None, 'built'], self.zones('a', 'b'))
        self.assertEqual(2, self.built.call_count)
        self.built.assert_called_with(None, ['a'])

    def test_a_page_given_its_specs_once(self):
        # Nova builds a grouped server's spec again each time it is asked
        # (it reads the group again); within given(), the page's answer
        # is the one given first, whoever asks.
        self.stored = {'a': _spec('az1', group={'name': 'g'}),
                       'b': _spec('az2')}
        with request_specs.given():
            first = request_specs.get_by_instance_uuids(None, ['a', 'b'])
            self.assertIs(first, request_specs.get_by_instance_uuids(
                None, ['a', 'b']))
            self.assertEqual(1, self.built.call_count)
            # Other servers, their own answer.
            request_specs.get_by_instance_uuids(None, ['a'])
            self.assertEqual(2, self.built.call_count)
        # Outside, asked again.
        request_specs.get_by_instance_uuids(None, ['a', 'b'])
        self.assertEqual(3, self.built.call_count)

    def test_servers_of_a_page_get_the_page_s_specs(self):
        # Some servers of a page, rendered alone as the whole page would
        # render them: the specs given for the page, not built again.
        self.stored = {'a': _spec('az1', group={'name': 'g'}),
                       'b': _spec('az2')}
        self.built.side_effect = lambda ctx, uuids: [
            request_specs.Spec(uuid, 'built', None) for uuid in uuids]
        with request_specs.given():
            page = request_specs.get_by_instance_uuids(None, ['a', 'b'])
            with request_specs.of_page(['a', 'b']):
                some = request_specs.get_by_instance_uuids(None, ['a'])
                with request_specs.only(['a']):
                    again = request_specs.get_by_instance_uuids(None, ['a'])
            built = [spec for spec in page if spec.instance_uuid == 'a']
            self.assertEqual(1, len(built))
            self.assertEqual(built, some)
            self.assertEqual(built, again)
            self.assertEqual(1, self.built.call_count)
            # Of another page than the one given: asked.
            with request_specs.of_page(['b', 'a']):
                request_specs.get_by_instance_uuids(None, ['a'])
            self.assertEqual(2, self.built.call_count)

    def test_a_spec_nova_cannot_load_hands_the_request_to_nova(self):
        # Nova's view loads it and fails the list: so does Nova's answer.
        self.stored = {'a': _spec('az1'), 'b': _unloadable('az2')}
        for _ in range(2):
            e = self.assertRaises(list_base.Unservable, self.zones, 'a', 'b')
            self.assertIn('IncompatibleObjectVersion', str(e))
        self.assertEqual(0, self.built.call_count)
        # Loadable again, it is read again.
        self.stored['b'] = _spec('az2')
        self.assertEqual(['az1', 'az2'], self.zones('a', 'b'))


class TestRequestSpecsDigestedByTheDatabase(TestRequestSpecs):

    DIGESTS = True

    def test_only_the_changed_texts_are_read(self):
        self.stored = {'a': _spec('az1'), 'b': _spec('az2')}
        self.assertEqual(['az1', 'az2'], self.zones('a', 'b'))
        self.assertEqual(['a', 'b'], self.texts_read)
        del self.texts_read[:]
        self.assertEqual(['az1', 'az2'], self.zones('a', 'b'))
        self.assertEqual([], self.texts_read)
        self.stored['b'] = _spec('az3')
        self.assertEqual(['az1', 'az3'], self.zones('a', 'b'))
        self.assertEqual(['b'], self.texts_read)
        self.assertEqual(3, self.decode.call_count)

    def test_a_spec_without_a_digest_is_read_every_time(self):
        # MySQL built without SHA2 answers NULL: nothing is kept.
        self._sha = lambda uuid, spec: None
        self.stored = {'a': _spec('az1')}
        self.assertEqual(['az1'], self.zones('a'))
        self.stored['a'] = _spec('az2')
        self.assertEqual(['az2'], self.zones('a'))
        self.assertEqual(['a', 'a'], self.texts_read)


class TestRequestSpecsCombinedByTheDatabase(
        TestRequestSpecsDigestedByTheDatabase):

    COMBINES = True

    def _sha(self, uuid, spec):
        # As the database digests a row: its uuid and its text.
        return hashlib.sha256((uuid + spec).encode('utf-8')).hexdigest()

    def test_a_page_seen_reads_its_digests_once(self):
        self.stored = {'a': _spec('az1'), 'b': _spec('az2')}
        for _ in range(3):
            self.assertEqual(['az1', 'az2'], self.zones('a', 'b'))
        self.assertEqual(1, self.digests_read)
        # Another page, and a spec changed: their digests are read.
        self.assertEqual(['az1'], self.zones('a'))
        self.assertEqual(2, self.digests_read)
        self.stored['b'] = _spec('az3')
        self.assertEqual(['az1', 'az3'], self.zones('a', 'b'))
        self.assertEqual(['az1', 'az3'], self.zones('a', 'b'))
        self.assertEqual(3, self.digests_read)
        # Changed back, the page is one seen, its digests those read then;
        # b's text is read again, its kept spec being az3's.
        self.stored['b'] = _spec('az2')
        self.assertEqual(['az1', 'az2'], self.zones('a', 'b'))
        self.assertEqual(3, self.digests_read)
        self.assertEqual(['a', 'b', 'b', 'b'], self.texts_read)


class TestRequestSpecsDigestedByTheIndex(TestRequestSpecs):
    """The index gives the page's digests: none are read elsewhere."""

    DIGESTS = True
    COMBINES = True

    def setUp(self):
        super().setUp()
        self.combined = self.useFixture(fixtures.MockPatchObject(
            request_specs.stored_specs, 'combined',
            side_effect=self._combined)).mock

    def zones(self, *uuids):
        # As the index holds them: the digest of each stored text.
        digests = {u: writer.spec_digest(self.stored.get(u)) for u in uuids}
        digests.update(self.index_lags)
        with request_specs.digests_from(lambda uuids: digests):
            return super().zones(*uuids)

    index_lags = {}

    def test_only_the_specs_of_new_digests_are_read(self):
        # As where the database digests them, the digests from the index.
        TestRequestSpecsDigestedByTheDatabase.\
            test_only_the_changed_texts_are_read(self)
        # The API database's digests are never asked.
        self.assertEqual((0, 0), (self.digests_read,
                                  self.combined.call_count))

    def test_a_server_the_index_holds_without_a_spec_reads_none(self):
        self.stored = {'a': _spec('az1')}
        self.assertEqual(['az1'], self.zones('a', 'b'))
        self.assertEqual(['a'], self.texts_read)

    def test_servers_without_an_index_digest_are_digested_by_the_database(
            self):
        # A row whose book holds no spec digest.
        self.index_lags = {'b': None}
        self.stored = {'a': _spec('az1'), 'b': _spec('az2')}
        self.assertEqual(['az1', 'az2'], self.zones('a', 'b'))
        self.combined.assert_called_once_with(None, ['b'])
        self.assertEqual(['a', 'b'], self.texts_read)
        self.assertEqual(['az1', 'az2'], self.zones('a', 'b'))
        self.assertEqual(['a', 'b'], self.texts_read)

    def test_a_kept_spec_is_shown_as_the_index_held_it(self):
        # The page's moment: the index's digest of the spec before.
        self.stored = {'a': _spec('az1')}
        self.assertEqual(['az1'], self.zones('a'))
        old = writer.spec_digest(self.stored['a'])
        self.stored['a'] = _spec('az2')
        self.index_lags = {'a': old}
        self.assertEqual(['az1'], self.zones('a'))
        self.index_lags = {}
        self.assertEqual(['az2'], self.zones('a'))
        self.assertEqual(['az2'], self.zones('a'))
        self.assertEqual(['a', 'a'], self.texts_read)

    def test_a_spec_written_since_the_page_was_read_hands_it_to_nova(self):
        # The page shows a's spec as it was when it was read; b's, not
        # kept, is read afterwards and found written since: the two are
        # of two moments, which Nova's one read of both never gives.
        self.stored = {'a': _spec('az1'), 'b': _spec('az2')}
        self.assertEqual(['az1'], self.zones('a'))
        self.index_lags = {u: writer.spec_digest(self.stored[u])
                           for u in 'ab'}
        self.stored = {'a': _spec('az3'), 'b': _spec('az4')}
        e = self.assertRaises(list_base.Unservable, self.zones, 'a', 'b')
        self.assertIn('instance b changed', str(e))
        # Gone since: the same.
        del self.stored['b']
        self.assertRaises(list_base.Unservable, self.zones, 'a', 'b')
        # Once the index holds the digests of now, the page is served.
        self.stored['b'] = _spec('az4')
        self.index_lags = {}
        self.assertEqual(['az3', 'az4'], self.zones('a', 'b'))

    def test_a_pages_specs_worked_out_once_with_its_memo(self):
        self.stored = {'a': _spec('az1', group={'name': 'g'}),
                       'b': _spec('az2')}
        memo = {}
        digests = {u: writer.spec_digest(self.stored[u]) for u in 'ab'}
        lookups = []

        def lookup(uuids):
            lookups.append(list(uuids))
            return digests

        def zones():
            with request_specs.digests_from(lookup):
                return [getattr(spec, 'availability_zone', spec) for spec in
                        request_specs.get_by_instance_uuids(
                            None, ['a', 'b'], memo=memo)]
        self.assertEqual(['az2', 'built'], zones())
        self.assertEqual(['az2', 'built'], zones())
        # The page's digests were looked up once; the spec Nova builds
        # (a group's, read again by Nova) is built each time.
        self.assertEqual([['a', 'b']], lookups)
        self.assertEqual(2, self.built.call_count)
        self.assertEqual(1, len(memo))
        # A spec whose digest the page does not hold is read each time:
        # none is kept in the memo.
        memo.clear()
        digests['b'] = None
        self.assertEqual(['az2', 'built'], zones())
        self.assertEqual({}, memo)
