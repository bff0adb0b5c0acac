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
"""Written detailed bodies, kept under what Nova's view reads."""

import datetime
import functools

import fixtures
from nova.api.openstack import api_version_request
from nova.api.openstack import wsgi as nova_wsgi
from nova.compute import api as compute_api
from nova import context as nova_context
from oslo_serialization import jsonutils

from nova_ext.instance_list import base as base_list
from nova_ext.instance_list.render import controller
from nova_ext.instance_list.render import detail_bodies
from nova_ext.instance_list.render import encode
from nova_ext.instance_list.render import fastpath
from nova_ext.instance_list.render import narrow
from nova_ext.instance_list.render import render_cache
from nova_ext.instance_list.render import request_specs
from nova_ext.instance_list.render import security_groups
from nova_ext.instance_list.render import view
from nova_ext.tests.unit import base

UUIDS = ('6f64a4ed-c166-4a38-864f-4ed42f5da11d',
         '0b1e7f43-4a0e-4c55-9e8c-6d2cf1a3a1b2')


class _Volumes(object):
    """The index's volumes of a page, as ``IndexDriver.volumes`` gives."""

    def __init__(self, found):
        self.found = found

    def volumes(self, context, uuids, generation=None):
        return {uuid: self.found[uuid] for uuid in uuids
                if uuid in self.found}


class TestPageBody(base.TestCase):

    def setUp(self):
        super().setUp()
        # Nova's compute API wants an RPC transport when it is made.
        self.useFixture(fixtures.MockPatchObject(
            compute_api.API, '__init__', return_value=None))
        self.decisions = (True, True, False)
        self.useFixture(fixtures.MockPatch(
            'nova_ext.seams.internals.server_views.detail_decisions',
            side_effect=lambda builder, request: self.decisions))
        self.bodies = detail_bodies.DetailBodies(10)
        self.docs = render_cache.RenderCache(10)
        self.builder = view.ViewBuilder()
        self.context = nova_context.RequestContext('user', 'project',
                                                   is_admin=True)
        self.groups = {UUIDS[0]: [{'name': 'default'}], UUIDS[1]: []}
        self.found = {UUIDS[0]: [{'volume_id': 'v1',
                                  'delete_on_termination': False}]}
        self.url = 'http://api/v2.1/servers/detail?all_tenants=1'
        self.version = '2.100'
        self.rows = {uuid: {} for uuid in UUIDS}
        #: The page's servers, in its order.
        self.order = list(UUIDS)
        # What each server's spec gives the view: (zone, hints).
        self.specs = {UUIDS[0]: ('az1', {'group': ['g1']}),
                      UUIDS[1]: (None, None)}
        self.asked = []
        # The list joins the services (host_status shown): the page's
        # first instance on each host read for theirs.
        self.expected = ['services']
        self.filled = []
        #: The rows whose host statuses were asked for.
        self.statuses_of = []
        #: The memo of the page's rows, as the driver keeps them; None:
        #: rows it does not keep.
        self.memo = None

    def fill_services(self, ctx, instances, cell_of):
        # As the driver's, for fastpath.host_statuses.
        self.filled.extend(instances)
        for instance in instances:
            instance.services = []

    def _statuses(self, listing, listed):
        self.statuses_of.append([row['uuid'] for row in listed])
        return fastpath.host_statuses(self, self.builder, listing, listed)

    def _specs(self, context, uuids):
        self.asked.append(uuids)
        return [request_specs.Spec(uuid, *self.specs[uuid])
                for uuid in uuids]

    def _row(self, uuid, spec='d' * 20, **values):
        # Not on a host: its zone is the row's, its host status NONE.
        row = {'uuid': uuid, 'id': 7, 'deleted': 0, 'host': None,
               'availability_zone': 'az1', 'access_ip_v4': None,
               'access_ip_v6': None,
               'created_at': datetime.datetime(2026, 1, 1),
               'updated_at': datetime.datetime(2026, 1, 2),
               'deleted_at': None, 'launched_at': None,
               'terminated_at': None, narrow.SPEC: spec}
        row.update(values)
        return row

    def _page_body(self, groups=True):
        """The PageBody of the page; ``groups``: a lookup, else kept."""
        request = nova_wsgi.Request.blank(self.url)
        request.api_version_request = api_version_request.APIVersionRequest(
            self.version)
        request.environ['nova.context'] = self.context
        listed, versions = [], {}
        for uuid in self.order:
            values = dict(self.rows[uuid])
            versions[uuid] = values.pop('version', 1.5)
            listed.append(self._row(uuid, **values))
        lookup = groups
        if groups is True:
            lookup = security_groups.Kept(self.context, self.order,
                                          self.groups)
        self.render = view.PageRender(self.docs, request, '')
        listing = controller.Listing(request, True, self.context,
                                     {'expected_attrs': self.expected})
        return detail_bodies.PageBody(
            self.bodies, self.builder, listing, listed, versions,
            self.render, fastpath.PageVolumes(_Volumes(self.found)), lookup,
            self._specs, functools.partial(self._statuses, listing),
            memo=self.memo)

    def _body(self, page_body, **changed):
        """The body Nova's view makes of the page, its documents kept."""
        self.render.flags = self.decisions[:2]
        servers = []
        for uuid in self.order:
            doc = encode.Shown(encode.Kept(id=uuid, name='srv'))
            doc['host_status'] = ''
            groups = self.groups[uuid]
            if groups:
                doc['security_groups'] = groups
            doc.update(changed.get(uuid, {}))
            servers.append(doc)
        return {'servers': servers}

    def _kept(self, **changed):
        """Keep the page's body; the body kept (Written), else None."""
        page_body = self._page_body()
        self.assertIsNone(page_body.kept())
        got = page_body.keep(self._body(page_body, **changed))
        return got if type(got) is encode.Written else None

    def test_the_same_reads_find_the_kept_body(self):
        written = self._kept()
        self.assertIsNotNone(written)
        self.assertEqual(jsonutils.dumps(self._body(None)), written.text)
        self.assertIs(written, self._page_body().kept())

    def test_every_read_tells_bodies_apart(self):
        self.assertIsNotNone(self._kept())

        def differs(undo, change):
            change()
            self.assertIsNone(self._page_body().kept())
            undo()
            self.assertIsNotNone(self._page_body().kept())
        row = self.rows[UUIDS[1]]
        for name, value in (('version', 2.5), ('spec', 'e' * 20),
                            ('availability_zone', 'az2')):
            differs(lambda name=name: row.pop(name),
                    lambda name=name, value=value: row.update(
                        {name: value}))
        differs(lambda: self.found.pop(UUIDS[1]),
                lambda: self.found.update({UUIDS[1]: [
                    {'volume_id': 'v2', 'delete_on_termination': True}]}))
        differs(lambda: self.groups.update({UUIDS[1]: []}),
                lambda: self.groups.update({UUIDS[1]: [{'name': 'web'}]}))
        for decisions in ((False, True, False), (True, False, False),
                          (True, True, None), (True, True, True)):
            differs(lambda: setattr(self, 'decisions', (True, True, False)),
                    lambda d=decisions: setattr(self, 'decisions', d))
        url = self.url
        differs(lambda: setattr(self, 'url', url),
                lambda: setattr(self, 'url', url + '&limit=1'))
        # A spec's zone or hints as the view is given them: a group
        # deleted drops its hint, the stored spec unchanged.
        spec = self.specs[UUIDS[0]]
        for other in (('az1', {}), ('az1', None), (None, {'group': ['g1']}),
                      ('az2', {'group': ['g1']})):
            differs(lambda: self.specs.update({UUIDS[0]: spec}),
                    lambda o=other: self.specs.update({UUIDS[0]: o}))

    def test_specs_read_before_2_96_are_none(self):
        self.version = '2.95'
        self.assertIsNotNone(self._kept())
        self.assertEqual([], self.asked)
        self.specs[UUIDS[0]] = ('az2', None)
        self.assertIsNotNone(self._page_body().kept())
        self.version = '2.100'
        self.assertIsNone(self._page_body().kept())
        self.assertEqual([list(UUIDS)], self.asked)

    def test_kept_only_as_the_view_read_it(self):
        # Nova's view decides and asks again as it renders: a body showing
        # other decisions, statuses or groups than the key's is not kept.
        for changed in ({UUIDS[0]: {'host_status': 'UP'}},
                        {UUIDS[1]: {'security_groups': [{'name': 'x'}]}},
                        {UUIDS[0]: {'security_groups': []}}):
            self.assertIsNone(self._kept(**changed), changed)
        page_body = self._page_body()
        page_body.kept()
        body = self._body(page_body)
        self.render.flags = (False, True)
        self.assertIs(body, page_body.keep(body))
        # A document Nova's view rendered, not one from the render cache.
        body = self._body(page_body)
        body['servers'][1] = dict(body['servers'][1])
        self.assertIs(body, page_body.keep(body))
        self.assertEqual(0, len(self.bodies))

    def test_a_page_that_keeps_none(self):
        row = self.rows[UUIDS[1]]
        for change in ({'updated_at': None}, {'version': None},
                       {'spec': None}):
            row.update(change)
            self.assertIsNone(self._kept(), change)
            row.clear()
        self.assertIsNotNone(self._kept())
        # Nova's view asks Neutron itself.
        page_body = self._page_body(groups=None)
        self.assertIsNone(page_body.kept())
        body = self._body(page_body)
        self.assertIs(body, page_body.keep(body))

    def test_services_read_where_the_list_joins_them(self):
        self.assertIsNotNone(self._page_body().kept() or self._kept())
        self.assertEqual(list(UUIDS), self.statuses_of[-1])
        # Both on no host: the first alone was made and given services.
        self.assertEqual([UUIDS[0]], [i.uuid for i in self.filled[-1:]])
        self.assertEqual(1, len(self.filled) / len(self.statuses_of))
        # No host_status shown: none read.
        self.decisions = (True, True, None)
        self.statuses_of, self.filled = [], []
        page_body = self._page_body()
        self.assertIsNone(page_body.kept())
        body = self._body(page_body)
        for server in body['servers']:
            del server['host_status']
        self.assertIs(encode.Written, type(page_body.keep(body)))
        self.assertEqual(([], []), (self.statuses_of, self.filled))
        # Shown, but the list did not join them: no body.
        self.decisions = (True, True, False)
        self.expected = []
        self.assertIsNone(self._kept())
        self.assertEqual([], self.statuses_of)

    def test_the_rows_part_worked_out_once_for_kept_rows(self):
        written = self._kept()
        self.assertIsNotNone(written)
        self.memo = {}
        # The same text: the body kept without a memo is found with one.
        self.assertIs(written, self._page_body().kept())
        self.assertEqual(1, len(self.memo))
        # The memo is the rows': a row read otherwise with the same memo
        # is not looked at again (the driver keeps new rows with a new
        # memo), the request's part is.
        self.rows[UUIDS[1]] = {'version': 2.5}
        self.assertIs(written, self._page_body().kept())
        self.groups[UUIDS[1]] = [{'name': 'web'}]
        self.assertIsNone(self._page_body().kept())
        self.groups[UUIDS[1]] = []
        self.memo = {}
        self.assertIsNone(self._page_body().kept())
        # Rows that keep no body are worked out once too.
        self.memo = {}
        self.rows[UUIDS[1]] = {'spec': None}
        self.assertIsNone(self._page_body().kept())
        self.rows[UUIDS[1]] = {}
        self.assertIsNone(self._page_body().kept())
        self.assertEqual({'detail_bodies.rows': None}, self.memo)

    def test_a_kept_body_found_writes_no_servers_reads(self):
        # Each server's reads are written out as text where a body is
        # patched or kept, not where the page's key finds its body.
        written = []
        shown = detail_bodies._shown

        def counted(uuids, columns):
            written.append(uuids)
            return shown(uuids, columns)
        self.useFixture(fixtures.MonkeyPatch(
            'nova_ext.instance_list.render.detail_bodies._shown', counted))
        kept = self._kept()
        self.assertIsNotNone(kept)
        self.assertEqual([list(UUIDS)], written)
        for _ in range(2):
            self.assertIs(kept, self._page_body().kept())
        self.assertEqual(1, len(written))

    def test_a_refused_stored_value_hands_the_page_to_nova(self):
        # As making the page's instances would: Nova's list fails on it.
        self.assertIsNotNone(self._kept())
        self.rows[UUIDS[1]] = {'access_ip_v4': 'not an address'}
        self.assertRaises(base_list.Unservable, self._page_body().kept)

    def test_host_status_unknown_only(self):
        # Policy showing only UNKNOWN: the documents show no NONE status.
        self.decisions = (True, True, True)
        page_body = self._page_body()
        page_body.kept()
        body = self._body(page_body)
        self.assertIs(body, page_body.keep(body))
        for server in body['servers']:
            del server['host_status']
        self.assertIs(encode.Written, type(page_body.keep(body)))

    def _rows(self, page_body, **changed):
        """``render_rows`` of Nova's view, recording the positions asked.

        Those of rows written since, in ``self.written``.

        :param changed: what a document shows, by uuid, as ``_body``.
        """
        asked = []
        self.written = []

        def render_rows(positions, written=()):
            asked.append(positions)
            self.written.append(written)
            servers = self._body(page_body, **changed)['servers']
            return ({'servers': [servers[n] for n in positions]},
                    self.decisions[:2])
        return render_rows, asked

    def _patched(self, **changed):
        """``(patched body, positions rendered)`` of the page now."""
        page_body = self._page_body()
        self.assertIsNone(page_body.kept())
        render_rows, asked = self._rows(page_body, **changed)
        return page_body.patched(render_rows), asked

    def test_servers_read_otherwise_alone_are_written_again(self):
        self.assertIsNotNone(self._kept())
        name = {UUIDS[1]: {'name': 'renamed'}}
        self.rows[UUIDS[1]] = {'version': 2.5}
        got, asked = self._patched(**name)
        self.assertEqual([[1]], asked)
        # Its row written since: its document is new.
        self.assertEqual([[1]], self.written)
        self.assertEqual(jsonutils.dumps(self._body(None, **name)), got.text)
        self.assertEqual(1, self.bodies.patches)
        # Kept: the next request with the same reads is its text.
        self.assertIs(got, self._page_body().kept())
        # The groups of the first server: its document alone, from the
        # body just patched.
        self.groups[UUIDS[0]] = [{'name': 'web'}]
        got, asked = self._patched(**name)
        self.assertEqual([[0]], asked)
        # Its row as it was: its document may be kept.
        self.assertEqual([[]], self.written)
        self.assertEqual(jsonutils.dumps(self._body(None, **name)), got.text)
        self.assertEqual(2, self.bodies.patches)

    def test_a_read_written_otherwise_is_read_otherwise(self):
        # Equal values the document writes apart (False, 0): the server
        # is rendered again, as the page's digest tells it apart.
        self.assertIsNotNone(self._kept())
        self.found[UUIDS[0]][0]['delete_on_termination'] = 0
        got, asked = self._patched()
        self.assertEqual([[0]], asked)
        self.assertIsNotNone(got)

    def test_what_cannot_be_patched_is_rendered_whole(self):
        self.assertIsNotNone(self._kept())
        url = self.url
        # Another request; the servers in another order; none before.
        self.url = url + '&limit=2'
        self.assertEqual((None, []), self._patched())
        self.url = url
        self.order.reverse()
        self.assertEqual((None, []), self._patched())
        self.order.reverse()
        self.bodies = detail_bodies.DetailBodies(10)
        self.rows[UUIDS[1]] = {'version': 2.5}
        self.assertEqual((None, []), self._patched())
        self.assertEqual(0, self.bodies.patches)

    def test_a_document_not_as_read_is_not_patched(self):
        # Nova's view decides and asks again as it renders.
        self.assertIsNotNone(self._kept())
        self.rows[UUIDS[0]] = {'version': 2.5}
        for changed in ({'host_status': 'UP'},
                        {'security_groups': [{'name': 'x'}]}):
            got, asked = self._patched(**{UUIDS[0]: changed})
            self.assertEqual((None, [[0]]), (got, asked), changed)
        page_body = self._page_body()
        page_body.kept()
        render_rows, _asked = self._rows(page_body)

        def other_flags(positions, written):
            return render_rows(positions, written)[0], (False, True)
        self.assertIsNone(page_body.patched(other_flags))
        self.assertEqual(0, self.bodies.patches)

    def test_a_row_written_again_is_shown_not_kept(self):
        # Read in full after its row was written again, a document is not
        # one the render cache keeps: the answer, but the body is not kept.
        self.assertIsNotNone(self._kept())
        self.rows[UUIDS[1]] = {'version': 2.5}
        page_body = self._page_body()
        self.assertIsNone(page_body.kept())
        render_rows, _asked = self._rows(page_body, **{
            UUIDS[1]: {'name': 'later'}})

        def read_again(positions, written):
            body, flags = render_rows(positions, written)
            body['servers'] = [dict(doc) for doc in body['servers']]
            return body, flags
        got = page_body.patched(read_again)
        self.assertEqual(jsonutils.dumps(self._body(None, **{
            UUIDS[1]: {'name': 'later'}})), got.text)
        self.assertEqual(1, self.bodies.patches)
        self.assertIsNone(self._page_body().kept())

    def test_an_evicted_body_is_not_patched(self):
        self.bodies = detail_bodies.DetailBodies(1)
        self.assertIsNotNone(self._kept())
        self.url += '&limit=2'
        self.assertIsNotNone(self._kept())
        self.url = self.url[:-len('&limit=2')]
        self.rows[UUIDS[1]] = {'version': 2.5}
        self.assertEqual((None, []), self._patched())
