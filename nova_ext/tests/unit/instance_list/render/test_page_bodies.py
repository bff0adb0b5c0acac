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
"""Written bodies of lists without details, kept per request and rows."""

from nova.api.openstack import api_version_request
from nova.api.openstack import wsgi as nova_wsgi
from nova import context as nova_context
from oslo_serialization import jsonutils

from nova_ext import conf
from nova_ext.instance_list import base as list_base
from nova_ext.instance_list import render
from nova_ext.instance_list.render import encode
from nova_ext.instance_list.render import fastpath
from nova_ext.instance_list.render import narrow
from nova_ext.instance_list.render import page_bodies
from nova_ext.instance_list import serving
from nova_ext.tests.unit import base


def _request(url='http://api/v2.1/servers?limit=2', version='2.1',
             admin=False):
    request = nova_wsgi.Request.blank(url)
    request.api_version_request = api_version_request.APIVersionRequest(
        version)
    request.environ['nova.context'] = nova_context.RequestContext(
        'user', 'project', is_admin=admin)
    return request


def _row(uuid, name='srv', version=1.5, spec='d' * 20, **extra):
    row = {'id': 7, 'uuid': uuid, 'display_name': name, 'deleted': 0,
           'access_ip_v4': None, 'access_ip_v6': None,
           narrow.VERSION: version, narrow.SPEC: spec}
    row.update(extra)
    return row


class TestKey(base.TestCase):

    def _key(self, rows, **request):
        return page_bodies.key(_request(**request), '', rows)

    def test_same_request_and_rows_same_key(self):
        rows = [_row('u1'), _row('u2')]
        self.assertEqual(self._key(rows), self._key([dict(r) for r in rows]))
        self.assertIsNotNone(self._key(rows))

    def test_what_the_body_shows_tells_keys_apart(self):
        rows = [_row('u1'), _row('u2')]
        key = self._key(rows)
        for other in ([_row('u2'), _row('u1')],
                      [_row('u1')],
                      [_row('u1'), _row('u2', name='renamed')],
                      [_row('u1'), _row('u2', access_ip_v4='10.0.0.1')],
                      [_row('u1'), _row('u2', access_ip_v6='::1')],
                      [_row('u1', access_ip_v4='10.0.0.1'), _row('u2')],
                      [_row('u1'), _row('u2', spec='e' * 20)]):
            self.assertNotEqual(key, self._key(other))
        moved = [_row('u1', access_ip_v4='10.0.0.1'), _row('u2')]
        self.assertNotEqual(self._key(moved), self._key(
            [_row('u1'), _row('u2', access_ip_v4='10.0.0.1')]))
        self.assertNotEqual(self._key(moved), self._key(
            [_row('u1', access_ip_v6='10.0.0.1'), _row('u2')]))
        for request in ({'url': 'http://api/v2.1/servers?limit=3'},
                        {'url': 'http://other/v2.1/servers?limit=2'},
                        {'version': '2.96'}, {'admin': True}):
            self.assertNotEqual(key, self._key(rows, **request))
        self.assertNotEqual(key, page_bodies.key(_request(), 'project', rows))
        self.flags(max_limit=2, group='api')
        self.assertNotEqual(key, self._key(rows))
        self.flags(max_limit=1000, group='api')
        self.assertEqual(key, self._key(rows))
        self.flags(compute_link_prefix='https://proxy/', group='api')
        self.assertNotEqual(key, self._key(rows))

    def test_where_one_part_ends_and_the_next_begins(self):
        self.assertNotEqual(self._key([_row('u1', name='ab')]),
                            self._key([_row('u1a', name='b')]))
        self.assertNotEqual(self._key([_row('u1', name='a', spec='bc')]),
                            self._key([_row('u1', name='ab', spec='c')]))

    def test_a_key_is_small_whatever_the_page(self):
        # A thousand rows' worth of text would be some 100 kB.
        rows = [_row('u%d' % n) for n in range(1000)]
        self.assertLess(len(repr(self._key(rows))), 1000)

    def test_what_the_body_does_not_read_does_not(self):
        # Nova's view of a list without details shows the uuid and name;
        # the rest of the row (its state, its metadata, which move its
        # version) leaves the body as it was. Its network info is loaded
        # before the body is looked up, whenever its rows changed
        # (loadable).
        self.assertEqual(self._key([_row('u1')]),
                         self._key([_row('u1', id=8, deleted=1, version=2.5,
                                         vm_state='stopped',
                                         task_state='powering-on')]))

    def test_a_row_without_what_keys_it_keeps_no_body(self):
        for missing in ('uuid', 'display_name', narrow.SPEC):
            row = _row('u2')
            row[missing] = None
            self.assertIsNone(self._key([_row('u1'), row]), missing)
            del row[missing]
            self.assertIsNone(self._key([_row('u1'), row]), missing)
        # A stored access IP is read with each row; a row read without
        # it cannot tell whether Nova's Instance takes it.
        for missing in ('access_ip_v4', 'access_ip_v6'):
            row = _row('u2')
            del row[missing]
            self.assertIsNone(self._key([_row('u1'), row]), missing)

    def _page(self, rows, memo):
        page = list_base.Page(rows)
        page.memo = memo
        return page

    def test_the_rows_part_worked_out_once_for_kept_rows(self):
        rows = [_row('u1'), _row('u2')]
        memo = {}
        key = self._key(self._page(rows, memo))
        self.assertEqual(key, self._key(rows))
        self.assertEqual(key.shown, self._key(rows).shown)
        self.assertEqual(1, len(memo))
        # Copies of the same kept rows (the memo is theirs): their part is
        # not worked out again, the request's part is.
        renamed = [_row('u1', name='other'), _row('u2')]
        self.assertEqual(key, self._key(self._page(renamed, memo)))
        self.assertNotEqual(key, self._key(self._page(renamed, {})))
        self.assertNotEqual(key, self._key(
            self._page(rows, memo), url='http://api/v2.1/servers?limit=3'))
        # Rows that keep no body are worked out once too.
        row = _row('u2', display_name=None)
        memo = {}
        self.assertIsNone(self._key(self._page([_row('u1'), row], memo)))
        self.assertIsNone(self._key(self._page(rows, memo)))


class TestBody(base.TestCase):

    def setUp(self):
        super().setUp()
        self.bodies = page_bodies.PageBodies(2)
        self.rendered = []

    def _render(self, name='n'):
        def render():
            self.rendered.append(name)
            return {'servers': [{'id': 'u1', 'name': name}]}
        return render

    def test_kept_written_and_given_again(self):
        first = page_bodies.body(self.bodies, 'k', self._render())
        again = page_bodies.body(self.bodies, 'k', self._render('other'))
        self.assertEqual(['n'], self.rendered)
        self.assertIs(first, again)
        self.assertEqual(jsonutils.dumps({'servers': [{'id': 'u1',
                                                       'name': 'n'}]}),
                         encode.dumps(again))

    def test_other_keys_are_rendered(self):
        page_bodies.body(self.bodies, 'k', self._render())
        page_bodies.body(self.bodies, 'l', self._render('l'))
        self.assertEqual(['n', 'l'], self.rendered)

    def test_nothing_kept_without_a_key_or_a_cache(self):
        for bodies, key in ((self.bodies, None), (None, 'k')):
            body = page_bodies.body(bodies, key, self._render())
            self.assertEqual({'servers': [{'id': 'u1', 'name': 'n'}]}, body)
        self.assertEqual(0, len(self.bodies))
        self.assertEqual(['n', 'n'], self.rendered)

    def test_each_body_given_is_counted(self):
        stats = serving.Stats()
        counted = render._Counted.of(self.bodies, stats)
        page_bodies.body(counted, 'k', self._render())
        self.assertEqual(0, stats.snapshot()['bodies_kept'])
        for n in (1, 2):
            page_bodies.body(counted, 'k', self._render('other'))
            self.assertEqual(n, stats.snapshot()['bodies_kept'])
        page_bodies.body(counted, 'l', self._render('l'))
        self.assertEqual(2, stats.snapshot()['bodies_kept'])
        self.assertEqual(['n', 'l'], self.rendered)
        self.assertIsNone(render._Counted.of(None, stats))

    def test_each_body_patched_is_counted(self):
        stats = serving.Stats()
        counted = render._Counted.of(self.bodies, stats)
        for n, name in enumerate(('a', 'b', 'b', 'c')):
            rows = [_row('u1', name=name), _row('u2')]
            page_bodies.body(
                counted, page_bodies.key(_request(), '', rows),
                lambda: {'servers': [{'id': r['uuid']} for r in rows]},
                lambda positions: [{'id': rows[p]['uuid'], 'name': 'x'}
                                   for p in positions])
        self.assertEqual(1, stats.snapshot()['bodies_kept'])
        self.assertEqual(2, stats.snapshot()['bodies_patched'])
        self.assertEqual(2, self.bodies.patches)

    def test_a_page_nova_renders_keeps_no_body(self):
        def refused():
            raise fastpath.NotRendered('a spec Nova cannot load')
        self.assertRaises(fastpath.NotRendered, page_bodies.body,
                          self.bodies, 'k', refused)
        self.assertEqual(0, len(self.bodies))
        page_bodies.body(self.bodies, 'k', self._render())
        self.assertEqual(['n'], self.rendered)


class TestCache(base.TestCase):

    def test_sized_by_the_page_cache(self):
        self.addCleanup(page_bodies.reset)
        self.flags(page_cache_size=0, group='nova_ext_instance_list')
        self.assertIsNone(page_bodies.cache(conf.CONF))
        self.flags(page_cache_size=3, group='nova_ext_instance_list')
        self.assertEqual(3, page_bodies.cache(conf.CONF).size)


class TestPatched(base.TestCase):
    """A body written anew from the last one, its renamed rows rendered."""

    def setUp(self):
        super().setUp()
        self.bodies = page_bodies.PageBodies(4)
        self.whole = []
        self.alone = []

    @staticmethod
    def _view(rows):
        # As Nova's view: a document per row, then a link from the last.
        body = {'servers': [{'id': r['uuid'], 'links': [],
                             'name': r['display_name']} for r in rows]}
        if rows:
            body['servers_links'] = [{'href': 'next?marker=' +
                                      rows[-1]['uuid'], 'rel': 'next'}]
        return body

    def _body(self, rows, url='http://api/v2.1/servers?limit=2',
              patching=True, view=None):
        view = view or self._view

        def render():
            self.whole.append([r['uuid'] for r in rows])
            return view(rows)

        def render_rows(positions):
            self.alone.append(positions)
            return view([rows[n] for n in positions])['servers']
        key = page_bodies.key(_request(url=url), '', rows)
        written = page_bodies.body(self.bodies, key, render,
                                   render_rows if patching else None)
        self.assertEqual(jsonutils.dumps(view(rows)), encode.dumps(written))
        return written

    def _rows(self, *names, **extra):
        return [_row('u%d' % n, name=name, **extra.get(name, {}))
                for n, name in enumerate(names)]

    def test_renamed_rows_alone_are_rendered(self):
        self._body(self._rows('a', 'b', 'c'))
        self._body(self._rows('a', 'B', 'c'))
        self._body(self._rows('a2', 'B', 'c-longer'))
        self._body(self._rows('a', 'B', 'c-longer'))
        self.assertEqual([['u0', 'u1', 'u2']], self.whole)
        self.assertEqual([[1], [0, 2], [0]], self.alone)
        self.assertEqual(3, self.bodies.patches)
        # A body kept is given as it is.
        self._body(self._rows('a', 'b', 'c'))
        self.assertEqual(3, len(self.alone))

    def test_other_changes_are_rendered_whole(self):
        self._body(self._rows('a', 'b', 'c'))
        moved = self._rows('a', 'b', 'c')
        moved[0], moved[1] = moved[1], moved[0]
        changed = (moved, self._rows('a', 'b'),
                   self._rows('a', 'b', 'c', 'd'),
                   self._rows('a', 'x', 'c', x={'spec': 'e' * 20}),
                   self._rows('a', 'x', 'c', x={'access_ip_v4': '10.0.0.1'}),
                   self._rows('a', 'x', 'c', x={'access_ip_v6': '::1'}))
        for n, rows in enumerate(changed):
            self._body(self._rows('a', 'b', 'c'))
            self._body(rows)
            self.assertEqual(n + 2, len(self.whole), n)
        self.assertEqual([], self.alone)

    def test_a_stored_access_ip_the_same_is_patched(self):
        ips = {'a': {'access_ip_v4': '10.0.0.1'},
               'x': {'access_ip_v4': '10.0.0.1'}}
        self._body(self._rows('a', 'b', **ips))
        self._body(self._rows('x', 'b', **ips))
        self.assertEqual([[0]], self.alone)
        self.assertEqual(1, len(self.whole))

    def test_only_from_a_body_still_kept(self):
        self._body(self._rows('a', 'b'))
        for n in range(4):
            self._body(self._rows('a', 'b'),
                       url='http://api/v2.1/servers?limit=%d' % (n + 3))
        # The last body of the first request was evicted: not patched.
        self._body(self._rows('a', 'x'))
        self.assertEqual([], self.alone)
        self.assertEqual(6, len(self.whole))
        self._body(self._rows('y', 'x'))
        self.assertEqual([[0]], self.alone)

    def test_only_the_same_requests_body(self):
        self._body(self._rows('a', 'b'))
        self._body(self._rows('a', 'x'),
                   url='http://api/v2.1/servers?limit=3')
        self._body(self._rows('a', 'x'), patching=False)
        self.assertEqual(3, len(self.whole))
        self.assertEqual([], self.alone)

    def test_a_body_without_a_document_per_row_is_not_patched(self):
        def leaves_out(rows):
            body = self._view(rows)
            body['servers'] = [s for s in body['servers'] if s['id'] != 'u1']
            return body
        rows = self._rows('a', 'b', 'c')
        key = page_bodies.key(_request(), '', rows)
        page_bodies.body(self.bodies, key, lambda: leaves_out(rows))
        self._body(self._rows('x', 'b', 'c'))
        self.assertEqual([], self.alone)
        # Rendered alone, a row the view leaves out.
        self._body(self._rows('x', 'y', 'c'), view=leaves_out)
        self.assertEqual([[1]], self.alone)
        self.assertEqual(2, len(self.whole))

    def test_a_row_nova_refuses_keeps_no_body(self):
        self._body(self._rows('a', 'b'))

        def refused(rows):
            raise fastpath.NotRendered('a spec Nova cannot load')
        rows = self._rows('a', 'x')
        self.assertRaises(fastpath.NotRendered, self._body, rows,
                          view=refused)
        self.assertEqual([[1]], self.alone)
        self._body(rows)
        self.assertEqual([[1], [1]], self.alone)
        self.assertEqual(1, len(self.whole))
        self.assertEqual(1, self.bodies.patches)
