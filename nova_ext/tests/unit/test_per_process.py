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
"""The objects each process makes for itself, in real threads and forks."""

import os
import threading

import testtools

from nova_ext import per_process


class TestRegistry(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.registry = per_process.Registry()
        self.made = []

    def make(self, value):
        self.made.append(value)
        return value

    def test_one_object_a_key_however_many_threads_ask(self):
        gate = threading.Barrier(8)
        got = []

        def ask():
            gate.wait(5)
            got.append(self.registry.get('k', lambda: self.make(object())))
        threads = [threading.Thread(target=ask) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        self.assertEqual(1, len(self.made))
        self.assertEqual(self.made * 8, got)
        self.assertEqual(2, self.registry.get('other', lambda: 2))
        self.assertEqual(self.made + [2], self.registry.clear())
        self.assertEqual([], self.registry.values())
        self.assertEqual(3, self.registry.get('k', lambda: 3))

    def _in_child(self, check):
        """Run ``check()`` in a forked child; whether it returned True."""
        pid = os.fork()
        if pid == 0:
            ok = []
            # On a thread, so that a child that hangs is told apart.
            thread = threading.Thread(target=lambda: ok.append(check()),
                                      daemon=True)
            thread.start()
            thread.join(5)
            os._exit(0 if ok == [True] else 1)
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status) == 0

    def test_a_forked_child_makes_its_own(self):
        parent = self.registry.get('k', lambda: self.make('parent'))
        self.assertTrue(self._in_child(
            lambda: (self.registry.values() == [] and
                     self.registry.get('k', lambda: 'child') == 'child')))
        self.assertEqual([parent], self.registry.values())

    def test_a_fork_while_another_thread_makes_one(self):
        # A thread of the parent is making an object, under the lock,
        # when the process forks: the child has no such thread to release
        # a lock it would share.
        making, done = threading.Event(), threading.Event()

        def slow():
            making.set()
            done.wait(10)
            return 'slow'
        thread = threading.Thread(target=self.registry.get,
                                  args=('slow', slow))
        thread.start()
        self.addCleanup(done.set)
        self.assertTrue(making.wait(5))
        self.assertTrue(self._in_child(
            lambda: self.registry.get('k', lambda: 'child') == 'child'))
        done.set()
        thread.join(10)
        self.assertEqual(['slow'], self.registry.values())
