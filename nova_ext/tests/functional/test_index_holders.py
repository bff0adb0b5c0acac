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
"""A process killed while it holds marks: its holds stop counting.

Change capture holds a mark from before a Nova transaction writes until
after it commits. A separate OS process, configured as an operator
configures a nova-conductor, opens a transaction on more instances than
``catch_up_limit`` and is killed with SIGKILL inside it. While it lives,
lists are Nova's (more changes are held than a list may apply); once it is
dead, the others see its heartbeats stop, and hand their lists to Nova
(it may have died with changes it could not record), until they release
its holds within ``holder_timeout``: the indexer's next pass applies their
marks, and lists are served by the index again, with Nova's answers.
"""

import os
import signal
import subprocess
import sys
import time

import fixtures
from nova import context as nova_context
import sqlalchemy as sa

from nova_ext import conf as ext_conf
from nova_ext.index.apply import refresh
from nova_ext.index.marks import witness
from nova_ext.index import schema
from nova_ext.tests.functional import holder_process
from nova_ext.tests.functional import test_capture_process
from nova_ext.tests.functional import test_index_parity

#: Seconds between two heartbeats, of the holder and of this process.
HEARTBEAT = 2.0

# test_capture_process's nova.conf, with this heartbeat.
NOVA_CONF = (test_capture_process.NOVA_CONF +
             'holder_heartbeat_interval = %s\n' % HEARTBEAT)

HELD = ['0c0c0c0c-0000-4000-8000-00000000000%d' % n for n in range(3)]


class TestDeadHolder(test_index_parity.IndexTestCase):

    TIMEOUT = 6.0

    def setUp(self):
        super().setUp()
        # Beats two seconds apart: a reader counts a holder silent once
        # it has not seen a vouch for two intervals, and a loaded machine
        # (CI runs the deployment tests beside these) delays a beat, or
        # this process's reading of it, by more than a second.
        self.flags(catch_up_limit=len(HELD) - 1, holder_timeout=self.TIMEOUT,
                   holder_heartbeat_interval=HEARTBEAT,
                   group='nova_ext_index')

    def start_holder(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(tmp, 'nova.conf')
        with open(path, 'w') as f:
            f.write(NOVA_CONF.format(tmp=tmp, index=self.index.connection,
                                     capture='true'))
        proc = subprocess.Popen(
            [sys.executable, '-m', holder_process.__name__,
             '--config-file', path] + HELD,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        self.addCleanup(self._kill, proc)
        self.assertEqual('held\n', proc.stdout.readline())
        return proc

    @staticmethod
    def _kill(proc):
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        proc.stdout.close()

    def table(self, table, *columns):
        with self.index.engine.connect() as conn:
            return sorted(tuple(r) for r in conn.execute(
                sa.select(*[table.c[c] for c in columns])))

    def assertEveryAnswer(self, served):
        """Each list's answer is Nova's; served by the index or not.

        :returns: the reasons the index gave for the lists it did not
            serve.
        """
        reasons = []
        for api in (self.admin_api, self.api):
            for uri in ('servers/detail', 'servers'):
                before = self.selector.stats.snapshot()
                self.assertSameAnswer(api, uri, served=served)
                after = self.selector.stats.snapshot()
                if not served:
                    reasons.append(after['last_reason'])
                    self.assertGreater(after['unservable'],
                                       before['unservable'])
        return reasons

    def test_holds_of_a_killed_process_stop_counting(self):
        for host in ('compute1-1', 'compute2-1'):
            self._create_server(host=host, networks='none')
        self.sync_index()
        self.assertEveryAnswer(served=True)
        proc = self.start_holder()
        self.assertEqual([(u,) for u in HELD],
                         self.table(schema.PENDING, 'uuid'))
        [(holder, pid)] = self.table(schema.HOLDERS, 'holder', 'pid')
        self.assertEqual(proc.pid, pid)
        self.assertEqual([(u, holder) for u in HELD],
                         self.table(schema.HOLDS, 'uuid', 'holder'))
        # This process lists from the index once it has seen the other
        # beat (the row recorded with a first beat, or the next one).
        seen = witness.get_witness(ext_conf.CONF)
        deadline = time.monotonic() + 10
        # (None: not read lately, so none is taken for vouching.)
        silent = None
        while silent is None or holder in silent:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
            silent = seen.silent()
        # Alive, it beats: longer than holder_timeout, its holds count.
        # A beat that a loaded machine delays past two intervals sends a
        # list to Nova too, for the holder's silence.
        deadline = time.monotonic() + self.TIMEOUT * 1.5
        reasons = []
        while time.monotonic() < deadline:
            reasons += self.assertEveryAnswer(served=False)
            time.sleep(0.5)
        limit = 'catch_up_limit %d' % (len(HELD) - 1)
        silent = 'have not shown in'
        self.assertEqual([], [r for r in reasons
                              if limit not in r and silent not in r])
        self.assertGreater(len([r for r in reasons if limit in r]),
                           len(reasons) // 2, reasons)
        # Killed right after a beat. A watcher counts holder_timeout from
        # when it first saw the last beat: not before this process last
        # read the one before it, since the last beat was committed after.
        last = self.table(schema.HOLDERS, 'beats')
        seen_before_last = waiting_since = time.monotonic()
        while True:
            looked = time.monotonic()
            if self.table(schema.HOLDERS, 'beats') != last:
                break
            seen_before_last = looked
            self.assertLess(looked - waiting_since, HEARTBEAT * 10)
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        killed = time.monotonic()
        ctx = nova_context.get_admin_context()
        while True:
            # The indexer's pass, which applies what the release renewed
            # (more marks than a list applies itself).
            refresh.process_pending(ctx, ext_conf.CONF)
            before = self.selector.stats.snapshot()['served']
            self.assertEqual(
                200, self._get(self.admin_api, 'servers/detail').status_code)
            if self.selector.stats.snapshot()['served'] > before:
                break
            # Within seconds: the timeout, and a heartbeat's reading.
            self.assertLess(time.monotonic() - killed, self.TIMEOUT * 4)
            time.sleep(0.2)
        self.assertGreaterEqual(time.monotonic() - seen_before_last,
                                self.TIMEOUT)
        self.assertEveryAnswer(served=True)
        self.assertEqual([], self.table(schema.HOLDERS, 'holder'))
        self.assertEqual([], self.table(schema.HOLDS, 'uuid'))
        self.assertEqual([], self.table(schema.PENDING, 'uuid'))
