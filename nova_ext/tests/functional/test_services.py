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
"""nova-ext-indexer and nova-ext-status-watcher as systemd runs them.

Each service is a process of its own reading a nova.conf, signalled as
systemd signals it: SIGHUP (``ExecReload``) must reload the mutable
options and leave it running, SIGTERM (``KillSignal``) must stop it with
exit 0. The indexer listens on a real RabbitMQ and writes a SQLite index;
the watcher reads a SQLite API database made by ``nova-manage api_db
sync`` and asks a stand-in placement (an HTTP server of its own process)
which providers carry its traits.
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
import uuid

import fixtures
from oslo_config import fixture as config_fixture
from oslotest import base
from prometheus_client import parser
import sqlalchemy as sa

from nova_ext.cmd import common
from nova_ext import conf as ext_conf
from nova_ext.index.marks import process
from nova_ext.index import schema
from nova_ext.notifications import dispatcher
from nova_ext.tests.functional import rabbit
from nova_ext.tests.functional import sqlserver
from nova_ext.tests.functional import test_cli
from nova_ext.tests.functional import test_indexer

BIN = os.path.dirname(sys.executable)
#: oslo.log's default line: date time pid LEVEL logger ...
LINE = re.compile(r'^\S+ \S+ (\d+) (\w+) ', re.MULTILINE)

# Placement as the watcher's report client talks to it: version discovery
# at the root, then one provider query per owned trait (none carry them).
PLACEMENT = textwrap.dedent('''
    import http.server
    import json
    import sys

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path.startswith('/resource_providers'):
                body = {'resource_providers': []}
            else:
                body = {'versions': [{
                    'id': 'v1.0', 'min_version': '1.0',
                    'max_version': '1.39', 'status': 'CURRENT',
                    'links': [{'rel': 'self', 'href': ''}]}]}
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header('Content-Type', 'application/json')
            self.send_header('Content-Length', str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
''')


def _gone(pid, timeout):
    """Whether process ``pid`` is gone within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


PENDING, TOLD = schema.PENDING, schema.TOLD


class _ServiceTest(base.BaseTestCase):
    """Starts ``PROG`` with a nova.conf of the test's, and signals it."""

    PROG = None

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.conf_file = os.path.join(self.dir, 'nova.conf')
        self.log_file = os.path.join(self.dir, 'service.log')
        self.proc = None
        # Where the units' Type=notify has systemd listen.
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(self.notify.close)
        self.notify.bind(os.path.join(self.dir, 'notify'))

    def conf_body(self):
        """The nova.conf sections the service needs besides [DEFAULT]."""
        raise NotImplementedError()

    def write_conf(self, debug):
        with open(self.conf_file, 'w') as f:
            f.write('[DEFAULT]\nstate_path = %s\ndebug = %s\n%s'
                    % (self.dir, debug, self.conf_body()))

    def start(self, *args):
        out = open(os.path.join(self.dir, 'service.out'), 'w')
        self.addCleanup(out.close)
        # A session of its own: the cleanup kills the master and its worker
        # at once.
        self.proc = subprocess.Popen(
            [os.path.join(BIN, self.PROG), '--config-file', self.conf_file,
             '--log-file', self.log_file] + list(args),
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=dict(os.environ,
                     NOTIFY_SOCKET=self.notify.getsockname()))
        self.addCleanup(self._kill, self.proc)

    def assertNotified(self, timeout=60):
        """systemd would have been told that the service runs."""
        self.notify.settimeout(timeout)
        try:
            self.assertEqual(b'READY=1', self.notify.recv(4096))
        except socket.timeout:
            self.fail('no READY=1 on NOTIFY_SOCKET:\n%s' % self._output())

    def _kill(self, proc):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(30)

    def read(self, path=None):
        try:
            with open(path or self.log_file) as f:
                return f.read()
        except FileNotFoundError:
            return ''

    def _output(self):
        return '%s\n--- service.out:\n%s' % (
            self.read()[-4000:],
            self.read(os.path.join(self.dir, 'service.out'))[-2000:])

    def wait_for(self, pattern, timeout=60, after=0):
        """The first match of ``pattern`` in the log after ``after``."""
        deadline = time.monotonic() + timeout
        while True:
            found = re.compile(pattern, re.MULTILINE).search(self.read(),
                                                             after)
            if found:
                return found
            if self.proc.poll() is not None:
                self.fail('%s exited with %s before logging %r:\n%s'
                          % (self.PROG, self.proc.returncode, pattern,
                             self._output()))
            if time.monotonic() > deadline:
                self.fail('%s never logged %r within %d s:\n%s'
                          % (self.PROG, pattern, timeout, self._output()))
            time.sleep(0.1)

    def running(self, after=0):
        """The pid of the worker once it runs (logged after ``after``)."""
        return int(self.wait_for(r'%s running \(worker pid (\d+)\)'
                                 % self.PROG, after=after).group(1))

    def levels(self, pid=None):
        return {level for p, level in LINE.findall(self.read())
                if pid is None or int(p) == pid}

    def reload_with_debug(self):
        """SIGHUP with debug on in nova.conf and the log moved away.

        :returns: the new worker's pid; its log lines are in a new file.
        """
        self.assertNotified()
        first = self.running()
        self.assertNotIn('DEBUG', self.levels(), self._output())
        self.write_conf(debug=True)
        # As logrotate does: the service must write to a new file.
        os.rename(self.log_file, self.log_file + '.1')
        self.proc.send_signal(signal.SIGHUP)
        self.wait_for(r'%s reloaded its configuration on SIGHUP \(changed: '
                      r'DEFAULT\.debug\)' % self.PROG)
        second = self.running()
        self.assertNotEqual(first, second)
        self.assertTrue(_gone(first, 30), 'the old worker still runs')
        # The mutable option took effect in the new worker.
        self.wait_for(r'^\S+ \S+ %d DEBUG ' % second)
        self.assertIsNone(self.proc.poll(), self._output())
        return second

    def stop(self, worker):
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.fail('%s still runs 30 s after SIGTERM:\n%s'
                      % (self.PROG, self._output()))
        self.assertEqual(0, code, self._output())
        self.assertTrue(_gone(worker, 10), 'the worker outlived its master')
        self.assertIn('%s stopped' % self.PROG, self.read())


class TestIndexerService(rabbit.SharedBroker, _ServiceTest):

    PROG = 'nova-ext-indexer'

    def setUp(self):
        super().setUp()
        self.index_url = 'sqlite:///%s' % os.path.join(self.dir, 'i.sqlite')
        self.api_url = 'sqlite:///%s' % os.path.join(self.dir, 'api.sqlite')
        self.metrics_port = sqlserver._free_port()
        self.write_conf(debug=False)
        for command in (['nova-ext-manage', 'index', 'db_sync'],
                        ['nova-manage', 'api_db', 'sync']):
            subprocess.run([os.path.join(BIN, command[0]), '--config-file',
                            self.conf_file] + command[1:],
                           check=True, capture_output=True, timeout=120)
        self.engine = sa.create_engine(self.index_url)
        self.addCleanup(self.engine.dispose)

    def conf_body(self):
        return ('transport_url = %s\n[oslo_messaging_notifications]\n'
                'transport_url = %s\n[nova_ext_index]\nconnection = %s\n'
                '[api_database]\nconnection = %s\n'
                '[nova_ext_metrics]\nindexer_port = %d\n'
                % (self.url, self.url, self.index_url, self.api_url,
                   self.metrics_port))

    def get(self, path):
        return get(self.metrics_port, path)

    def scrape(self):
        return scrape_metrics(self.metrics_port)

    def _notifier(self):
        return test_indexer.nova_notifier(self, self.url)

    def _wait_marked(self, uuid_, timeout=60):
        deadline = time.monotonic() + timeout
        while uuid_ not in test_indexer.marked(self.engine):
            if time.monotonic() > deadline:
                self.fail('change never recorded:\n%s' % self._output())
            time.sleep(0.2)

    def test_sighup_reloads_and_sigterm_stops(self):
        self.start('--no-worker')
        notifier = self._notifier()
        worker = self.reload_with_debug()
        # The new worker listens: a change sent now is recorded.
        changed = str(uuid.uuid4())
        notifier.info({}, 'instance.update', test_indexer._payload(changed))
        self._wait_marked(changed)
        self.stop(worker)

    def test_a_notification_its_process_marked_is_not_marked_again(self):
        # This test's process is the Nova process that sends it, with
        # nova_ext's driver and its in-process index consumer; the real
        # indexer gets the same notification from the bus, and finds its
        # id recorded with the consumer's mark.
        self.start('--no-worker')
        self.assertNotified()
        worker = self.running()
        conf = self.useFixture(config_fixture.Config(ext_conf.CONF))
        conf.config(consumers=['index'], group='nova_ext_notifications')
        conf.config(connection=self.index_url, group='nova_ext_index')
        conf.config(connection=None, group='api_database')
        dispatcher.reset()
        self.addCleanup(dispatcher.reset)
        self.addCleanup(process.reset)
        notifier = rabbit.notifier(
            self, self.url, 'nova', 'nova-api:test',
            'versioned_notifications', driver=['messagingv2', 'nova_ext'])
        changed = str(uuid.uuid4())
        # The indexer stopped until the consumer has recorded its mark:
        # otherwise the first to record marks it.
        os.kill(worker, signal.SIGSTOP)
        try:
            notifier.info({}, 'instance.update',
                          test_indexer._payload(changed))
            self.assertTrue(dispatcher.get_dispatcher(ext_conf.CONF).drain(
                30))
            with self.engine.connect() as conn:
                first = conn.execute(sa.select(
                    PENDING.c.seq, TOLD.c.message_id).select_from(
                    PENDING.join(TOLD, TOLD.c.seq == PENDING.c.seq)).where(
                    PENDING.c.uuid == changed)).all()
            self.assertEqual(1, len(first), first)
        finally:
            os.kill(worker, signal.SIGCONT)
        deadline = time.monotonic() + 60
        while self.scrape().get(('nova_ext_indexer_changes_told_total',
                                 ())) != 1:
            if time.monotonic() > deadline:
                self.fail('never found told:\n%s' % self._output())
            time.sleep(0.2)
        got = self.scrape()
        self.assertEqual(0, got[('nova_ext_indexer_changes_recorded_total',
                                 ())])
        with self.engine.connect() as conn:
            # The consumer's mark, unrenewed; the id handed over.
            self.assertEqual([first[0][0]], conn.execute(sa.select(
                PENDING.c.seq).where(PENDING.c.uuid == changed)).scalars(
                ).all())
            self.assertEqual([], conn.execute(sa.select(
                TOLD.c.message_id)).all())

    def test_metrics_and_health_endpoint(self):
        self.start('--no-worker')
        self.assertNotified()
        worker = self.running()
        changed = str(uuid.uuid4())
        self._notifier().info({}, 'instance.update',
                              test_indexer._payload(changed))
        self._wait_marked(changed)
        got = self.scrape()
        self.assertEqual(1, got[('nova_ext_indexer_changes_recorded_total',
                                 ())])
        self.assertEqual(0, got[(
            'nova_ext_indexer_record_failures_in_a_row', ())])
        self.assertEqual(1, got[('nova_ext_index_up', ())])
        self.assertEqual(1, got[('nova_ext_index_schema_at_head', ())])
        self.assertEqual(1, got[('nova_ext_index_pending_changes', ())])
        status, body = self.get('/healthcheck')
        self.assertEqual(200, status, body)
        health = json.loads(body)
        self.assertTrue(health['healthy'])
        self.assertEqual(1, health['pending'])
        # One mark, within catch_up_limit: nova-api lists from the index.
        self.assertEqual((True, []), (health['api_lists_from_index'],
                                      health['api_reasons']))
        # The index unreadable: the scrape and the check say so.
        os.rename(self.index_url[len('sqlite:///'):], self.dir + '/away')
        self.assertEqual(0, self.scrape()[('nova_ext_index_up', ())])
        status, body = self.get('/healthcheck')
        self.assertEqual(503, status, body)
        self.assertFalse(json.loads(body)['index_readable'])
        os.rename(self.dir + '/away', self.index_url[len('sqlite:///'):])
        self.assertEqual(200, self.get('/healthcheck')[0])
        self.stop(worker)


def get(port, path):
    """``(status, body)`` of a service's endpoint."""
    url = 'http://127.0.0.1:%d%s' % (port, path)
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def scrape_metrics(port):
    """``{(name, sorted labels): value}`` of one scrape of ``/metrics``."""
    status, text = get(port, '/metrics')
    if status != 200:
        raise AssertionError('/metrics answered %s: %s' % (status, text))
    return {(sample.name, tuple(sorted(sample.labels.items()))):
            sample.value
            for family in parser.text_string_to_metric_families(text)
            for sample in family.samples}


class TestStatusWatcherService(_ServiceTest):

    PROG = 'nova-ext-status-watcher'

    def setUp(self):
        super().setUp()
        self.api_url = 'sqlite:///%s' % os.path.join(self.dir, 'api.sqlite')
        self.placement = subprocess.Popen(
            [sys.executable, '-c', PLACEMENT], stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL, text=True)
        self.addCleanup(self.placement.wait, 10)
        self.addCleanup(self.placement.kill)
        self.addCleanup(self.placement.stdout.close)
        self.port = int(self.placement.stdout.readline())
        self.metrics_port = sqlserver._free_port()
        self.write_conf(debug=False)
        subprocess.run([os.path.join(BIN, 'nova-manage'), '--config-file',
                        self.conf_file, 'api_db', 'sync'],
                       check=True, capture_output=True, timeout=120)

    def conf_body(self):
        return ('[api_database]\nconnection = %s\n'
                '[placement]\nauth_type = none\n'
                'endpoint_override = http://127.0.0.1:%d\n'
                '[nova_ext_compute_status]\ntrait_callbacks = compute-status\n'
                'watch_interval = 1\n'
                '[nova_ext_metrics]\nwatcher_port = %d\n'
                % (self.api_url, self.port, self.metrics_port))

    def test_metrics_and_health_endpoint(self):
        self.start()
        self.assertNotified()
        worker = self.running()
        self.wait_for(r'nova_ext compute status watcher started')
        deadline = time.monotonic() + 30
        while True:
            got = scrape_metrics(self.metrics_port)
            if got[('nova_ext_status_watcher_sweeps_total', ())] >= 2:
                break
            self.assertLess(time.monotonic(), deadline, self._output())
            time.sleep(0.2)
        self.assertEqual(0, got[(
            'nova_ext_status_watcher_sweep_failures_total', ())])
        self.assertEqual(0, got[('nova_ext_status_watcher_last_sweep',
                                 (('count', 'services'),))])
        self.assertLess(time.time() - got[(
            'nova_ext_status_watcher_last_sweep_timestamp_seconds', ())], 30)
        status, body = get(self.metrics_port, '/healthcheck')
        self.assertEqual(200, status, body)
        self.assertTrue(json.loads(body)['healthy'])
        self.stop(worker)

    def once(self):
        done = subprocess.run(
            [os.path.join(BIN, self.PROG), '--config-file', self.conf_file,
             '--once', '--format', 'json'], capture_output=True, text=True,
            timeout=120, stdin=subprocess.DEVNULL)
        self.assertEqual(0, done.returncode, done.stderr)
        self.assertEqual({'services': 0, 'providers': 0},
                         {k: v for k, v in json.loads(done.stdout).items()
                          if k in ('services', 'providers')})

    def test_once_as_json(self):
        self.once()

    def test_once_with_cells_mapped(self):
        with open(self.conf_file, 'a') as f:
            f.write('[database]\nconnection = sqlite:///%s\n'
                    % os.path.join(self.dir, 'cell1.sqlite'))
        test_cli.map_cells(self.conf_file)
        self.once()

    def test_sighup_reloads_and_sigterm_stops(self):
        self.start()
        worker = self.reload_with_debug()
        # The new worker sweeps, and says so now that debug is on.
        found = self.wait_for(r'^\S+ \S+ %d DEBUG \S+ .*nova_ext compute '
                              r'status sweep \d+: ' % worker)
        self.wait_for(r'nova_ext compute status sweep \d+: ',
                      after=found.end())
        for path in (self.log_file + '.1', self.log_file):
            self.assertNotIn('sweep failed', self.read(path))
        self.stop(worker)


class TestCommandLine(base.BaseTestCase):

    def _run(self, prog, *args):
        return subprocess.run([os.path.join(BIN, prog)] + list(args),
                              capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)

    def test_version_is_nova_exts(self):
        for prog in ('nova-ext-indexer', 'nova-ext-status-watcher'):
            done = self._run(prog, '--version')
            self.assertEqual(0, done.returncode, done.stderr)
            self.assertEqual(common.version(), done.stdout.strip())

    def test_a_missing_configuration_file_is_one_line(self):
        for prog, code in (('nova-ext-indexer', 2),
                           ('nova-ext-status-watcher', 2),
                           ('nova-ext-status', 255)):
            done = self._run(prog, '--config-file', '/nonexistent/nova.conf',
                             *(['upgrade', 'check'] if prog ==
                               'nova-ext-status' else []))
            self.assertEqual(code, done.returncode, done.stderr)
            self.assertNotIn('Traceback', done.stderr)
            self.assertIn('%s: ConfigFilesNotFoundError: Failed to find '
                          'some config files: /nonexistent/nova.conf'
                          % prog, done.stderr)

    def test_help_lists_oslo_and_own_options(self):
        done = self._run('nova-ext-indexer', '--help')
        self.assertEqual(0, done.returncode, done.stderr)
        for option in ('--config-file', '--config-dir', '--debug',
                       '--log-file', '--version', '--no-worker',
                       '--no-reconcile'):
            self.assertIn(option, done.stdout)
        done = self._run('nova-ext-status-watcher', '--help')
        self.assertIn('--once', done.stdout)

    def test_unknown_trait_callback_exits_2_naming_it(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'nova.conf')
        with open(path, 'w') as f:
            f.write('[nova_ext_compute_status]\n'
                    'trait_callbacks = no-such-callback\n')
        done = self._run('nova-ext-status-watcher', '--config-file', path)
        self.assertEqual(2, done.returncode, done.stderr)
        self.assertIn('no-such-callback', done.stderr)
        self.assertNotIn('Traceback', done.stderr)
