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
"""A list's body written from its documents' kept texts, as Nova's."""

import datetime

from oslo_serialization import jsonutils

from nova_ext.instance_list.render import encode
from nova_ext.instance_list.render import render_cache
from nova_ext.tests.unit import base


def _kept(**extra):
    doc = {'id': 'u1', 'name': 'n\u00e9 "q" \u2603', 'status': 'ACTIVE',
           'addresses': {'net': [{'addr': '10.0.0.1', 'version': 4}]},
           'metadata': {}, 'progress': 0, 'weight': 1.5, 'locked': False,
           'key_name': None,
           'OS-SRV-USG:launched_at': datetime.datetime(2026, 1, 2, 3, 4, 5)}
    doc.update(extra)
    return render_cache.kept(doc)


class TestDumps(base.TestCase):

    def assertNovas(self, body):
        written = encode.dumps(body)
        self.assertEqual(jsonutils.dumps(body), written)
        return written

    def test_kept_documents_with_what_a_page_adds(self):
        kept = _kept()
        plain, added, groups = (encode.Shown(kept), encode.Shown(kept),
                                encode.Shown(kept))
        added['host_status'] = 'UP'
        groups['host_status'] = 'UP'
        groups['security_groups'] = [{'name': 'default'}]
        self.assertNovas({
            'servers': [plain, added, groups, {'id': 'miss', 'x': [1]}],
            'servers_links': [{'href': 'http://api/next', 'rel': 'next'}]})

    def test_empty_and_other_bodies(self):
        for body in ({'servers': []}, {}, [], {'servers': [], 'n': 3},
                     {'servers': ['text', 4, None]}, {1: 'not text'}):
            self.assertNovas(body)

    def test_a_written_body_is_its_text(self):
        body = {'servers': [encode.Shown(_kept())]}
        written = encode.Written(self.assertNovas(body))
        self.assertEqual(jsonutils.dumps(body), encode.dumps(written))

    def test_kept_text_is_what_is_written(self):
        kept = _kept()
        shown = encode.Shown(kept)
        self.assertNovas({'servers': [shown]})
        self.assertEqual(jsonutils.dumps(kept), kept.text)
        # Written once: later bodies take the kept text as it is.
        kept.text = kept.text.replace('ACTIVE', 'KEPT!!')
        shown = encode.Shown(kept)
        shown['host_status'] = 'UP'
        self.assertIn('"status": "KEPT!!"', encode.dumps({'servers': [shown]}))
        self.assertIn('"host_status": "UP"}', encode.dumps(
            {'servers': [shown]}))

    def test_changed_documents_are_written_whole(self):
        kept = _kept()
        kept.text = jsonutils.dumps(kept).replace('ACTIVE', 'STALE!')
        replaced, removed, moved, keyed = (encode.Shown(kept)
                                           for _ in range(4))
        replaced['status'] = 'SHUTOFF'
        del removed['progress']
        moved.pop('id')
        moved['id'] = 'u1'
        keyed[5] = 'not text'
        # The last key renamed, its value the same object: only the names
        # tell it from the kept document.
        renamed = encode.Shown(kept)
        last = list(kept)[-1]
        renamed['renamed'] = renamed.pop(last)
        for doc in (replaced, removed, moved, renamed):
            self.assertNotIn('STALE!', self.assertNovas({'servers': [doc]}))
        self.assertEqual(jsonutils.dumps({'servers': [keyed]}),
                         encode.dumps({'servers': [keyed]}))

    def test_shared_added_values(self):
        kept, groups = _kept(), [{'name': 'default'}, {'name': 'web'}]
        docs = [encode.Shown(kept) for _ in range(3)]
        for doc in docs:
            doc['security_groups'] = groups
        docs[2]['security_groups'] = [{'name': 'other'}]
        self.assertNovas({'servers': docs})

    def test_added_values_written_as_nova_writes_them(self):
        # Values JSON has no type for, written by to_primitive, and text
        # JSON escapes, in what a page adds and in documents not kept.
        kept = _kept()
        shown = encode.Shown(kept)
        shown['host_status'] = 'UP \u2603 "q"'
        shown['when'] = datetime.datetime(2026, 1, 2, 3, 4, 5, 6)
        shown['many'] = (1, 2.5, None, True)
        self.assertNovas({'servers': [shown, {
            'id': 'plain', 'at': datetime.datetime(2026, 1, 2),
            'nan': float('nan')}], 'n': 1.0})

    def test_kept_is_not_a_copy_of_a_page(self):
        kept = _kept()
        shown = encode.Shown(kept)
        shown['host_status'] = 'UP'
        self.assertNotIn('host_status', kept)
        self.assertIs(kept, shown.kept)


class TestWritten(base.TestCase):

    def _bodies(self):
        kept = _kept()
        added = encode.Shown(kept)
        added['host_status'] = 'UP'
        links = [{'href': 'http://api/next', 'rel': 'next'}]
        docs = [encode.Shown(kept), added, {'id': 'miss', 'x': [1]}]
        return ({'servers': docs, 'servers_links': links},
                {'servers_links': links, 'servers': docs},
                {'servers': docs}, {'servers': []},
                {'n': 'before', 'servers': docs[:1], 'm': [encode.Shown(
                    _kept(name='x'))]})

    def assertPlaces(self, written, docs):
        self.assertEqual(len(docs), len(written.starts))
        for start, end, doc in zip(written.starts, written.ends, docs):
            self.assertEqual(jsonutils.dumps(doc), written.text[start:end])

    def test_written_as_nova_writes_it_with_each_document_placed(self):
        for body in self._bodies():
            written = encode.written(body, 'servers')
            self.assertEqual(jsonutils.dumps(body), written.text)
            self.assertEqual(written.text, encode.dumps(written))
            self.assertPlaces(written, body['servers'])

    def test_a_body_without_the_list_is_not_placed(self):
        for body in ({'other': []}, {'servers': 'text'}, [], {1: []}):
            written = encode.written(body, 'servers')
            self.assertEqual(jsonutils.dumps(body), written.text)
            self.assertIsNone(written.starts)

    def test_an_item_is_written_as_in_its_body(self):
        for body in self._bodies():
            for doc in body['servers']:
                self.assertEqual(jsonutils.dumps(doc), encode.item(doc))

    def test_patched_is_the_body_with_the_new_documents_written(self):
        for body in self._bodies()[:3]:
            docs = body['servers']
            written = encode.written(body, 'servers')
            # Longer, shorter and as long as the document replaced, at
            # the start, the end and between.
            for changes in ({0: {'id': 'u1', 'name': 'a much longer name'}},
                            {2: {'id': 'm'}},
                            {0: {'id': 'u2'}, 2: {'id': 'missed', 'x': [2]}},
                            {1: encode.Shown(_kept(name='renamed'))}):
                now = dict(body, servers=[changes.get(n, doc)
                                          for n, doc in enumerate(docs)])
                patched = written.patched(
                    {n: encode.item(doc) for n, doc in changes.items()})
                self.assertEqual(jsonutils.dumps(now), patched.text)
                self.assertPlaces(patched, now['servers'])
                # And patched again from there.
                again = patched.patched({1: encode.item({'id': 'z'})})
                now['servers'][1] = {'id': 'z'}
                self.assertEqual(jsonutils.dumps(now), again.text)
                self.assertPlaces(again, now['servers'])
            self.assertEqual(jsonutils.dumps(body), written.text)
