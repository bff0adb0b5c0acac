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
"""Written bodies kept by key, and the last one of each request."""

from nova_ext.instance_list.render import encode
from nova_ext.instance_list.render import kept_bodies
from nova_ext.tests.unit import base


class _Key(kept_bodies.Key):
    REQUEST = 2


def _written(*items):
    return encode.written({'servers': list(items)}, 'servers')


class TestKeptBodies(base.TestCase):

    def setUp(self):
        super().setUp()
        self.bodies = kept_bodies.KeptBodies(2)

    def test_the_last_body_given_for_each_request(self):
        a = _Key(('url', 1, 'rows-a'), ['a'])
        b = _Key(('url', 1, 'rows-b'), ['b'])
        other = _Key(('url', 2, 'rows-a'), ['o'])
        self.assertEqual(('url', 1), a.request)
        self.assertIsNone(self.bodies.last(a))
        first, second = _written({'id': 1}), _written({'id': 2})
        self.bodies.put(a, first)
        self.assertEqual((['a'], first), self.bodies.last(b))
        self.bodies.put(b, second)
        self.assertEqual((['b'], second), self.bodies.last(a))
        self.assertIsNone(self.bodies.last(other))
        # Given again, kept: the last again, and not a use of the cache.
        hits = self.bodies.hits
        self.bodies.given(a, self.bodies.peek(tuple(a)))
        self.assertEqual((['a'], first), self.bodies.last(b))
        self.assertEqual(hits, self.bodies.hits)

    def test_what_rows_read_is_worked_out_where_asked(self):
        worked_out = []

        def rows_read(text):
            def work_out():
                worked_out.append(text)
                return [text]
            return work_out
        a = _Key(('url', 1, 'rows-a'), rows_read('a'))
        body = _written({'id': 1})
        # Kept as the last body: worked out, so as to hold it alone.
        self.bodies.put(a, body)
        self.assertEqual(['a'], worked_out)
        # Given again under a key of the same parts: not asked.
        again = _Key(('url', 1, 'rows-a'), rows_read('again'))
        self.bodies.given(again, body)
        self.assertEqual((['a'], body), self.bodies.last(again))
        self.assertEqual(['a'], worked_out)
        self.assertEqual(['again'], again.shown)
        self.assertEqual(['again'], again.shown)
        self.assertEqual(['a', 'again'], worked_out)

    def test_a_body_without_positions_is_never_the_last(self):
        a = _Key(('url', 1, 'rows-a'), ['a'])
        self.bodies.put(a, encode.Written('{"servers": {}}'))
        self.assertIsNone(self.bodies.last(a))
        # Nor is a key that is not a Key.
        self.bodies.put(('url', 1, 'rows-b'), _written({'id': 2}))
        self.assertIsNone(self.bodies.last(a))

    def test_an_evicted_body_is_no_last_one(self):
        a = _Key(('url', 1, 'rows-a'), ['a'])
        self.bodies.put(a, _written({'id': 1}))
        for n in range(2):
            self.bodies.put(('other', n), _written({'id': n}))
        self.assertIsNone(self.bodies.last(a))

    def test_patches_are_counted(self):
        self.bodies.patched()
        self.bodies.patched()
        self.assertEqual(2, self.bodies.patches)
