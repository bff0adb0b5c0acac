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
"""A change stream whose writers' clocks disagree, in the real cloud.

A cell conductor and a nova-api process run with their clocks 5 s behind
the others' (libfaketime, as on a host whose clock is behind): the
conductor writes what its cell's compute reports, and the nova-api, one
worker with nova_ext on a port of its own, makes a random half of the
stream's changes. Lists go to the nova-apis on time and are compared with
the stock one's, as in the plain stream; every change must show at once.
``NOVA_EXT_CLOCK_ACTIONS`` sets the stream's length.

A skewed process must be what a host whose clock is wrong is: its wall
clock off, its waits timed right. No holder of theirs may be taken for
dead, which a heartbeat that never beats would be.

It runs after the plain stream and before the faults (test modules run in
the order of their names).
"""

import json
import os
import subprocess
import sys
import time

from nova_ext_tools.cloud import clock
from nova_ext_tools.cloud import layout
from nova_ext_tools.cloud import nova as cloud_nova
from nova_ext_tools.tests.deployment import base
from nova_ext_tools.tests.deployment import test_stream

BEHIND = '-5s'

#: Run on the clock BEHIND, with the machine's time as its argument: how
#: far behind its wall clock is, and how long its waits of 0.2 s took.
_PROBE = """
import json, sys, threading, time
behind = float(sys.argv[1]) - time.time()
lock = threading.Lock()
lock.acquire()
took = {}
for name, wait in (('lock', lambda: lock.acquire(timeout=0.2)),
                   ('event', lambda: threading.Event().wait(0.2)),
                   ('sleep', lambda: time.sleep(0.2))):
    started = time.perf_counter()
    wait()
    took[name] = time.perf_counter() - started
print(json.dumps({'behind': behind, 'took': took}))
"""
#: What nova-api and the indexer warn when they take a holder for dead
#: that held marks (one that held none, a process stopped, is an INFO).
_TAKEN_FOR_DEAD = 'stopped beating for'


class TestClockOfAHost(base.CloudTestCase):

    def test_wall_clock_behind_waits_on_time(self):
        env = dict(os.environ, **clock.environ(BEHIND))
        out = subprocess.run(
            [sys.executable, '-c', _PROBE, repr(time.time())],
            env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(0, out.returncode, out.stderr)
        probe = json.loads(out.stdout)
        # 5 s, less the probe's start.
        self.assertTrue(4 < probe['behind'] <= 5, out.stdout)
        self.assertEqual({'lock', 'event', 'sleep'}, set(probe['took']))
        for name, took in probe['took'].items():
            self.assertTrue(0.2 <= took < 2, (name, out.stdout))


class TestClocks(base.CloudTestCase):

    def setUp(self):
        super().setUp()
        nova = self.cloud.nova
        conductor = 'nova-conductor-' + layout.CELLS[0]
        nova.set_clock(conductor, BEHIND)
        self.addCleanup(nova.set_clock, conductor, None)
        nova.start_skewed_api(BEHIND)
        self.addCleanup(self.cloud.ps.stop, cloud_nova.SKEWED_API)

    def test_stream_with_clocks_behind(self):
        seed, actions, s = test_stream.new_stream(
            self, 'NOVA_EXT_CLOCK_ACTIONS', 60)
        behind = {user: self.connect(user, compute='nova_skewed')
                  for user in s.conns}
        counted = test_stream.counters_before(self)
        dead_before = self.taken_for_dead()
        started = time.monotonic()
        try:
            # First, a change 5 s behind right after one on time, listed
            # in between: the one case a clock behind always shows.
            sid = s.create('member1')
            s.settle(sid)
            # Within the 5 s: few lists after the first.
            for conn, name, lists in ((s.conns['member1'][0], 'on time', 2),
                                      (behind['member1'], 'behind', 6)):
                conn.compute.update_server(sid, name=name)
                s.check_lists(0, 'renamed %s' % name, per_action=lists)
            s.writers = {user: [s.conns[user][0], behind[user]]
                         for user in s.conns}
            s.run(actions)
        finally:
            test_stream.counts('clock stream', seed, s, started)
        share = test_stream.served_share(self, 'clock stream', seed, s,
                                         counted)
        test_stream.exact_and_whole(self, seed, s)
        self.assertGreaterEqual(share, 0.9, 'seed %d' % seed)
        self.assertEqual(dead_before, self.taken_for_dead(), 'seed %d' % seed)

    def taken_for_dead(self):
        """The warnings that a holder was taken for dead, in every log."""
        return [line for line in self.nova_ext_lines(
            'WARNING', ['nova-api', 'nova-ext-indexer', cloud_nova.SKEWED_API])
            if _TAKEN_FOR_DEAD in line]
