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
"""A cell whose database goes away, in the real cloud.

It runs after the streams (test modules run in the order of their names),
so that both cells hold servers. The last cell's database is reached
through a forwarder (``nova_ext_tools.cloud.tcpproxy``); stopping it is
that database server failing: every Nova process finds the cell down at
its next read. The first lists after that, and the first after it is
back, at microversions 2.68 (the cell's servers left out), 2.69 and latest
(minimal records, status UNKNOWN), as admin and as a member, are the stock
nova-api's answers byte for byte. While the cell is down nova_ext hands
each list to Nova, having learnt it from the request's own reads; once it
is back, it serves them from the index again.

Before that, the cell's database user loses its grants: Nova answers 500
then (its scatter-gather cannot rebuild SQLAlchemy's exception), and so
must nova_ext, byte for byte.
"""

import json

from nova_ext_tools.cloud import nova as cloud_nova
from nova_ext_tools.tests.deployment import base
from nova_ext_tools.tests.deployment import faults
from nova_ext_tools.tests.deployment import stream
from nova_ext_tools.tests.deployment import test_stream

CELL = cloud_nova.PROXIED_CELL
VERSIONS = ('2.68', '2.69', 'latest')


class _Sent(object):
    def __init__(self):
        self.sent = 0


class TestDownCell(base.CloudTestCase):

    def compare_all(self, listers, sent, phase, status=200):
        """Every path, user and version once.

        The servers of the admin 2.69 detail; with ``status`` None, the
        statuses answered instead, whatever they are.
        """
        seen, statuses = None, set()
        already = sum(lister.sent for lister in listers.values())
        for user, lister in listers.items():
            for version in VERSIONS:
                for path in stream.PATHS:
                    url = path + ('?all_tenants=1' if user == 'admin'
                                  else '')
                    same, answer, before, after = lister.compare(url,
                                                                 version)
                    self.assertTrue(same, '%s: %s as %s at %s: %s' % (
                        phase, url, user, version,
                        stream.first_difference(answer, before)))
                    statuses.add(answer[0])
                    if status is None:
                        continue
                    self.assertEqual(status, answer[0], answer[1][:500])
                    if (user, version, path) == (
                            'admin', '2.69', '/servers/detail'):
                        seen = json.loads(answer[1])['servers']
        sent.sent = sum(lister.sent for lister in listers.values()) - already
        return statuses if status is None else seen

    def outcomes(self, sent, counted):
        now = test_stream.accounted_for(self, sent, counted)
        return now, {k: now.get(k, 0) - counted.get(k, 0) for k in now}

    def test_lists_while_a_cell_is_down_and_after(self):
        listers = {user: stream.Lister(self.connect(user),
                                       self.connect(user, stock=True))
                   for user in ('admin', 'member1')}
        injected = faults.Faults(self.cloud)

        injected.take_cell_down(CELL)
        try:
            statuses = self.compare_all(listers, _Sent(), 'access denied',
                                        status=None)
        finally:
            injected.bring_cell_up(CELL)
        print('cell database access denied: statuses %s' % statuses)

        counted = test_stream.counters_before(self)
        self.cloud.nova.stop_db_proxy()
        try:
            down = _Sent()
            servers = self.compare_all(listers, down, 'cell down')
        finally:
            self.cloud.nova.start_db_proxy()
        unknown = [s for s in servers if s['status'] == 'UNKNOWN']
        # Else the cell was not down for Nova, or held no server: the
        # comparison would prove nothing.
        self.assertTrue(unknown, 'no UNKNOWN server in %s' % servers)
        counted, delta = self.outcomes(down, counted)
        print('cell down: %d servers of the admin 2.69 list UNKNOWN, '
              'outcomes %s' % (len(unknown), delta))
        self.assertEqual(0, delta.get('served', 0), delta)

        up = _Sent()
        servers = self.compare_all(listers, up, 'cell back')
        self.assertNotIn('UNKNOWN', {s['status'] for s in servers})
        counted, delta = self.outcomes(up, counted)
        print('cell back: outcomes %s' % delta)
        self.assertEqual(up.sent, delta.get('served', 0), delta)
