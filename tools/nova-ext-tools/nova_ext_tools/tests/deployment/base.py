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
"""What the deployment tests share: the running cloud and its clients."""

import json
import os
import unittest
import urllib.request

from nova_ext_tools.cloud import bootstrap
from nova_ext_tools.cloud import build


def state():
    return os.environ.get('NOVA_EXT_CLOUD_STATE', '')


class CloudTestCase(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        path = os.path.join(state(), 'cloud.json')
        if not os.path.exists(path):
            raise unittest.SkipTest('no cloud runs (tox -e deployment '
                                    'starts one): %s' % path)
        cls.cloud = build.Cloud(state())
        cls.lay = cls.cloud.lay
        with open(os.path.join(state(), 'resources.json')) as f:
            cls.resources = json.load(f)

    def connect(self, user='admin', stock=False, compute=None):
        conn = bootstrap.connect(self.lay, user, stock=stock,
                                 compute=compute)
        self.addCleanup(conn.close)
        return conn

    def nova_ext_errors(self):
        """The ERROR lines nova_ext's code logged in the cloud's services."""
        return self.nova_ext_lines('ERROR')

    def nova_ext_lines(self, level, names=None):
        """The lines nova_ext's code logged at ``level``.

        In the logs of ``names`` (every Nova process and nova_ext service
        if None). Tracebacks are logged a line each: one record counts
        once.
        """
        if names is None:
            names = self.cloud.nova.process_names() + [
                'nova-ext-indexer', 'nova-ext-status-watcher']
        found = []
        for name in names:
            seen = set()
            for line in self.log_of(name).splitlines():
                words = line.split(None, 6)
                if (len(words) > 4 and words[3] == level and
                        words[4].startswith('nova_ext') and
                        (words[2], words[1]) not in seen):
                    seen.add((words[2], words[1]))
                    found.append('%s: %s' % (name, line))
        return found

    def log_of(self, name):
        with open(self.cloud.ps.log(name), errors='replace') as f:
            return f.read()


def database_name(url):
    """The database a SQLAlchemy URL names: a cell's, from its mapping."""
    return url.rsplit('/', 1)[1].split('?')[0]


def cells(cloud):
    """[(cell name, its compute's host, its database)] by mapping id."""
    rows = [line.split('\t') for line in cloud.db.sql(
        "SELECT name, database_connection FROM cell_mappings "
        "WHERE name <> 'cell0' ORDER BY id", 'nova_api').splitlines()[1:]]
    return [(name, cloud.lay.compute_host(name), database_name(url))
            for name, url in rows]


def metrics(lay):
    with urllib.request.urlopen(lay.url('metrics', '/metrics'),
                                timeout=10) as r:
        return r.read().decode()
