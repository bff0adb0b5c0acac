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
"""A Nova process that exits with changes the index could not take yet.

``nova-manage db archive_deleted_rows`` writes and exits. Its captured
changes that the index could not record meanwhile (its database
restarting, its grants revoked) wait in the process's memory; this test
runs a separate OS process configured with capture, locks the SQLite
index while it writes, and checks that it records them at its exit once
the index is back, within ``max_lag``, and says which it gave up on past
that.
"""

import os
import re
import signal
import subprocess
import sys
import time

import sqlalchemy as sa
import testtools

from nova_ext.index import schema
from nova_ext.tests.functional import exit_process
from nova_ext.tests.functional import test_capture_process
from nova_ext.tests.unit.index import base as index_base


class ExitWithChangesUnrecorded(test_capture_process.IndexInTmp):

    #: OS_NOVA_DISABLE_EVENTLET_PATCHING of the process.
    native = None

    def start(self, max_lag, serve=False):
        """The process, once it has written while the index is locked.

        :param serve: it serves as a Nova service after its writes
            (``exit_process``); returned once it does. ``'worker'``: the
            service writes, in its forked worker.
        """
        path = os.path.join(self.tmp, 'nova.conf')
        with open(path, 'w') as f:
            f.write(test_capture_process.NOVA_CONF.format(
                tmp=self.tmp, index=self.index, capture='true'))
            f.write('capture_timeout = 0.1\nmax_lag = %s\n' % max_lag)
            # Its log on standard error; standard output is the protocol.
            f.write('[DEFAULT]\nuse_stderr = true\n')
        proc = subprocess.Popen(
            [sys.executable, '-m', exit_process.__name__, '--config-file',
             path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=dict(
                os.environ, OS_NOVA_DISABLE_EVENTLET_PATCHING=self.native,
                NOVA_EXT_TEST_EXIT=serve if serve == 'worker' else
                'service' if serve else 'return'))
        self.addCleanup(self._stop, proc)
        self.assertEqual('ready', proc.stdout.readline().strip(),
                         proc.stderr.read() if proc.poll() else '')
        lock = index_base.lock(self, self.path)
        proc.stdin.write('go\n')
        proc.stdin.flush()
        self.assertEqual('written', proc.stdout.readline().strip())
        if serve:
            self.assertEqual('serving', proc.stdout.readline().strip())
        return proc, lock

    def finish(self, proc):
        """Its log, once it exited cleanly."""
        _out, err = proc.communicate(timeout=120)
        self.assertEqual(0, proc.returncode, err[-3000:])
        self.assertEqual(self.native == '0', 'Eventlet based' in err,
                         'the concurrency of the process')
        return err

    @staticmethod
    def _stop(proc):
        if proc.poll() is None:
            proc.kill()
        proc.communicate()

    def recorded_once_back(self, proc, lock, back=3, timer_failed=False):
        """Its log, once it waited, the index came back and it recorded.

        :param proc, lock: as :meth:`start` returns them, max_lag 120 s;
            the process is to wait now, at its exit or its stop.
        :param back: seconds from now until the index is back.
        :param timer_failed: the only errors logged are oslo.service's,
            of a timer that raised.
        """
        time.sleep(back)
        self.assertIsNone(proc.poll())
        lock.execute('ROLLBACK')
        err = self.finish(proc)
        self.assertEqual([exit_process.FIRST, exit_process.UUID],
                         sorted(self.marked()))
        self.assertIn('waiting up to 120 s', err)
        self.assertIn('changes recorded; exiting', err)
        errors = [line for line in err.splitlines() if ' ERROR ' in line]
        if timer_failed:
            self.assertNotEqual([], errors)
            errors = [line for line in errors if not re.search(
                r' ERROR oslo\.service\.backend\._\w+\.loopingcall ', line)]
        self.assertEqual([], errors)
        self.assertEqual(0, self.count(schema.HOLDS))
        return err

    def marked(self):
        with self.engine.connect() as conn:
            return [r.uuid for r in conn.execute(sa.select(
                schema.PENDING.c.uuid))]

    def test_it_records_them_once_the_index_is_back(self):
        proc, lock = self.start(max_lag=120)
        # Main has returned; the process waits at its exit.
        self.recorded_once_back(proc, lock)
        # It was a holder before the index was locked. Its holder row went
        # after its holds were recorded, not before (when the index was
        # still locked): nothing is left for the watchers to wait out.
        self.assertEqual(0, self.count(schema.HOLDERS))

    def test_a_service_stopped_records_them_once_the_index_is_back(self):
        # On native threads, oslo.service leaves by os._exit once SIGTERM
        # has stopped the service: no atexit hook runs.
        proc, lock = self.start(max_lag=120, serve=True)
        proc.send_signal(signal.SIGTERM)
        err = self.recorded_once_back(proc, lock)
        self.assertIn('nova-conductor service graceful shutdown finished',
                      err)
        # Its holder row went at the stop, without the atexit hooks: no
        # nova-api waits for it to be taken for dead.
        self.assertEqual(0, self.count(schema.HOLDERS))

    def test_a_worker_whose_wait_raised_in_its_stop_records_them(self):
        # The worker leaves once wait() has raised; the stop is still
        # under way in another thread. It writes first once its wait() has
        # begun, as nova-conductor does.
        proc, lock = self.start(max_lag=120, serve='worker')
        proc.send_signal(signal.SIGTERM)
        # Its manager takes 3 s to stop.
        err = self.recorded_once_back(proc, lock, back=8, timer_failed=True)
        self.assertIn('nova-conductor service graceful shutdown finished',
                      err)
        self.assertIn('A dynamic interval looping call should supply '
                      'either an interval or periodic_interval_max', err)
        self.assertEqual(0, self.count(schema.HOLDERS))

    def test_past_max_lag_it_exits_naming_what_it_lost(self):
        proc, lock = self.start(max_lag=3)
        err = self.finish(proc)
        lock.execute('ROLLBACK')
        lost = [line for line in err.splitlines() if ' ERROR ' in line]
        self.assertEqual(1, len(lost), err[-3000:])
        self.assertIn('changes of 1 instances not recorded in the index (%s)'
                      % exit_process.UUID, lost[0])
        self.assertEqual([exit_process.FIRST], self.marked())


class TestNativeThreads(ExitWithChangesUnrecorded, testtools.TestCase):

    native = '1'


class TestEventlet(ExitWithChangesUnrecorded, testtools.TestCase):
    """As ``nova-manage``, whose default concurrency is still eventlet."""

    native = '0'
