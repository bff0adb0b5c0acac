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
"""A differential change stream through both nova-apis of the real cloud.

Seeded random actions of real clients (openstacksdk, keystone tokens)
through nova_ext's nova-api; after each, immediately, list requests to
both nova-apis, rotating over /servers and /servers/detail, admin
(all_tenants), member and reader, microversions 2.1, 2.73 and latest.
``NOVA_EXT_STREAM_SEED`` replays a run; ``NOVA_EXT_STREAM_ACTIONS`` sets
its length.
"""

import os
import random
import subprocess
import time

from nova_ext_tools.cloud import novaext
from nova_ext_tools.cloud import services
from nova_ext_tools.tests.deployment import base
from nova_ext_tools.tests.deployment import stream


def archiver(test):
    """Run nova-manage db archive_deleted_rows, as an operator does.

    nova.conf has capture on, as in every Nova process.
    """
    def archive():
        done = subprocess.run([
            services.venv_bin('nova-manage'), '--config-file',
            test.cloud.nova.conf, 'db', 'archive_deleted_rows',
            '--all-cells', '--until-complete'], capture_output=True,
            text=True)
        # 1: rows were archived; 0: there were none.
        test.assertIn(done.returncode, (0, 1), done.stderr[-2000:])
    return archive


def new_stream(test, length_variable, default):
    """(seed, length, stream): a stream over both clients of each user.

    ``NOVA_EXT_STREAM_SEED`` replays a run; ``length_variable`` names the
    environment variable of its length.
    """
    seed = int(os.environ.get('NOVA_EXT_STREAM_SEED')
               or random.SystemRandom().randrange(2 ** 32))
    actions = int(os.environ.get(length_variable) or default)
    conns = {user: (test.connect(user), test.connect(user, stock=True))
             for user in ('admin', 'member1', 'reader1', 'member2')}
    return seed, actions, stream.Stream(random.Random(seed), conns,
                                        test.resources,
                                        archive=archiver(test))


def counts(what, seed, s, started):
    """Print what stream ``s`` did."""
    print('%s seed %d: %d actions, %d comparisons, %d differences, %.0f s'
          % (what, seed, len(s.actions), s.comparisons, len(s.differences),
             time.monotonic() - started))


def exact_and_whole(test, seed, s):
    """No difference in stream ``s``, and nothing lost from the index."""
    test.assertEqual([], s.differences[:5], 'seed %d: %d differences'
                     % (seed, len(s.differences)))
    # The index holds what the cells hold.
    done = test.cloud.ext.command('nova-ext-manage', 'index', 'verify',
                                  check=False)
    test.assertEqual(0, done.returncode, done.stdout + done.stderr)


#: Why nova-api may leave a list the index served to Nova's view to render
#: in a stream (reasons as counted, numbers and UUIDs as N): a server just
#: created is still a build request, or one deleted meanwhile left the
#: index while its page was rendered.
EXPECTED_HANDED = ('handed: build requests are on the page',
                   'handed: servers N')


def served_share(test, what, seed, s, counted):
    """The share of the requests ``s`` sent that the index answered.

    From nova-api's counters in the indexer's metrics, against
    ``counted``, those before (:func:`counters_before`): of the requests
    whose outcome nova-api has published (see :func:`accounted_for`).
    Nova's view may render a list the index served only for a reason the
    stream makes (:data:`EXPECTED_HANDED`); this fails the test otherwise.
    """
    now = accounted_for(test, s, counted)
    delta = {k: now.get(k, 0) - counted.get(k, 0) for k in now}
    handed = {k: n for k, n in delta.items() if ':' in k and n}
    delta = {k: n for k, n in delta.items() if ':' not in k}
    published = sum(delta.get(k, 0) for k in novaext.ATTEMPTS)
    share = delta.get('served', 0) / published
    print('%s seed %d: %d of the %d requests to nova_ext\'s nova-api whose '
          'outcome is published (of %d sent) answered by the index (%.1f%%),'
          ' %d of them rendered by nova_ext; outcomes %s; handed to Nova\'s '
          'view for %s' % (what, seed, delta.get('served', 0), published,
                           s.sent, 100 * share, delta.get('rendered', 0),
                           delta, handed))
    test.assertEqual([], [k for k in handed
                          if not k.startswith(EXPECTED_HANDED)],
                     'seed %d: lists handed to Nova\'s view: %s'
                     % (seed, handed))
    return share


#: Seconds after which every nova-api worker has published its counters:
#: it does at most every api_counters_interval, and within as long of its
#: last list request, whether or not another follows.
DUE = novaext.PUBLISH_SECONDS


def _counters(test):
    """{outcome: total} and {'outcome: reason': total} of nova-api, merged."""
    text = base.metrics(test.lay)
    return dict(novaext.list_counters(text), **novaext.handed_reasons(text))


def counters_before(test):
    """nova-api's list counters (see :func:`_counters`) before a stream."""
    time.sleep(DUE)
    return _counters(test)


def accounted_for(test, s, counted, rounds=10):
    """The counters once the requests ``s`` sent to nova_ext are in them.

    Every worker publishes the outcome of its last request within DUE
    seconds, whichever worker uWSGI gave it to, with no request after it;
    a few rounds allow for a publication that waited for the index.
    """
    for _ in range(rounds):
        time.sleep(DUE)
        now = _counters(test)
        published = sum(now.get(k, 0) - counted.get(k, 0)
                        for k in novaext.ATTEMPTS)
        if published >= s.sent:
            return now
    test.fail('nova-api published the outcome of %d of the %d requests sent'
              % (published, s.sent))


class TestChangeStream(base.CloudTestCase):

    def test_stream(self):
        seed, actions, s = new_stream(self, 'NOVA_EXT_STREAM_ACTIONS', 300)
        counted = counters_before(self)
        started = time.monotonic()
        try:
            s.run(actions)
        finally:
            counts('stream', seed, s, started)
        share = served_share(self, 'stream', seed, s, counted)
        exact_and_whole(self, seed, s)
        self.assertGreaterEqual(share, 0.9, 'seed %d' % seed)
        # No fault was made: nova_ext must not have failed anywhere (the
        # streams after this one make faults).
        self.assertEqual([], self.nova_ext_errors())
