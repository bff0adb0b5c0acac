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
"""Contract: the collector's permanent generation, and Nova leaving it be."""

import gc
import os
import weakref

import nova

from nova_ext import exception
from nova_ext.seams.internals import heap
from nova_ext.tests import fixtures as ext_fixtures
from nova_ext.tests.unit import base


class _Node(object):
    pass


def _cycle():
    """An unreachable reference cycle, and a weak reference to it."""
    node = _Node()
    node.me = node
    return weakref.ref(node)


def _assert_frozen(test, frozen):
    """The objects frozen then, but for those freed since, and no more."""
    # A frozen object leaves the permanent generation when it is freed.
    test.assertLessEqual(gc.get_freeze_count(), frozen)
    test.assertGreater(gc.get_freeze_count(), frozen * 0.9)


class TestHeap(base.TestCase):

    def setUp(self):
        super().setUp()
        heap.reset()
        self.addCleanup(heap.reset)
        # Another test of the process may have left a freeze behind.
        gc.unfreeze()

    def test_frozen_cycles_are_not_collected_until_unfrozen(self):
        gc.disable()
        self.addCleanup(gc.enable)
        garbage = _cycle()
        gc.freeze()
        self.addCleanup(gc.unfreeze)
        gc.collect()
        self.assertIsNotNone(garbage())
        gc.unfreeze()
        gc.collect()
        self.assertIsNone(garbage())

    def test_freeze_once_collects_first_then_freezes(self):
        gc.disable()
        self.addCleanup(gc.enable)
        garbage = _cycle()
        self.assertEqual(0, gc.get_freeze_count())
        frozen = heap.freeze_once()
        # The garbage was collected, not frozen forever.
        self.assertIsNone(garbage())
        self.assertEqual(frozen, heap.frozen())
        _assert_frozen(self, frozen)
        # Most of a process holding Nova is frozen: a full collection walks
        # what is made afterwards only.
        self.assertGreater(frozen, 10 * len(gc.get_objects()))

    def test_once_per_process(self):
        frozen = heap.freeze_once()
        made = [_Node() for _ in range(100)]
        self.assertIsNone(heap.freeze_once())
        # What was made since stays in the collector's walks.
        _assert_frozen(self, frozen)
        self.assertEqual(100, len(made))

    def test_reset_unfreezes(self):
        heap.freeze_once()
        heap.reset()
        self.assertEqual(0, gc.get_freeze_count())
        self.assertIsNone(heap.frozen())

    def test_refused_on_untested_nova(self):
        self.useFixture(ext_fixtures.UntestedNova())
        self.assertRaises(exception.UnsupportedNovaVersion, heap.freeze_once)
        self.assertEqual(0, gc.get_freeze_count())

    def test_nova_leaves_the_collector_alone(self):
        # Nova's own settings of the collector would be undone by, or
        # undo, the freeze.
        calls = ('gc.freeze', 'gc.unfreeze', 'gc.disable', 'gc.set_threshold')
        found = []
        top = os.path.dirname(nova.__file__)
        for folder, _dirs, files in os.walk(top):
            for name in files:
                if name.endswith('.py'):
                    path = os.path.join(folder, name)
                    with open(path, errors='replace') as f:
                        text = f.read()
                    found += ['%s: %s' % (path, c) for c in calls
                              if c in text]
        self.assertEqual([], found)
