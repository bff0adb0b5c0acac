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
"""Demo scene: servers in every cell listed through the instance index.

The index is created, synced from the cells with nova-ext-manage, and
switched on in nova-api; the same list is then timed through the index and
through Nova's own path, compared byte for byte, and answered once more
with the index database unreachable.
"""

import io
import statistics
import time

from nova import context as nova_context
from oslo_config import cfg

from nova_ext.cmd import manage
from nova_ext.cmd import manage_index
from nova_ext.seams import api as api_ep
from nova_ext.tests.functional import fixtures as ext_fixtures

CONF = cfg.CONF
URI = 'servers/detail?all_tenants=1&limit=1000'
UNREACHABLE = 'mysql+pymysql://nova:secret@127.0.0.1:9/nova_ext_index'


def _manage(*argv):
    args = manage.build_parser().parse_args(['index'] + list(argv))
    out = io.StringIO()
    code = manage_index.run(nova_context.get_admin_context(), CONF, args,
                            out=out)
    return code, out.getvalue().splitlines()


def _timed(api, rounds=5):
    times, response = [], None
    for _ in range(rounds):
        started = time.monotonic()
        response = api.api_request(URI, check_response_status=[200])
        times.append(time.monotonic() - started)
    return statistics.median(times), response


def _stock(fn):
    with api_ep.stock_instance_list():
        return fn()


def index(cloud, report, args):
    report.section('The instance index: one query for every cell')
    index_fixture = cloud.useFixture(ext_fixtures.IndexFixture(cloud))
    report.line('[nova_ext_index]connection = %s', index_fixture.connection)
    code, lines = _manage('sync')
    report.line('$ nova-ext-manage index sync')
    for line in lines:
        report.line('  %s', line)
    report.check(code == 0, 'sync copied every cell into the index')

    cloud.flags(driver='index', group='nova_ext_instance_list')
    cloud.flags(retry_interval=1, group='nova_ext_instance_list')
    selector = api_ep.attach_instance_list(CONF)
    report.line('[nova_ext_instance_list]driver = index (nova-api routes '
                'its list through nova_ext)')

    api = cloud.admin_api
    index_time, got = _timed(api)
    stock_time, want = _stock(lambda: _timed(api))
    servers = len(got.json()['servers'])
    report.table(['path', 'median of 5', 'servers'], [
        ['index', '%.0f ms' % (index_time * 1000), servers],
        ['Nova (every cell)', '%.0f ms' % (stock_time * 1000),
         len(want.json()['servers'])]])
    report.check(got.content == want.content,
                 'GET /%s: the same bytes from the index and from Nova'
                 % URI)
    report.check(selector.stats.snapshot()['served'] >= 5,
                 'the index answered (%(served)d served)'
                 % selector.stats.snapshot())

    report.line('')
    report.line('Fault: the index database becomes unreachable')
    connection = index_fixture.connection
    cloud.flags(connection=UNREACHABLE, group='nova_ext_index')
    during = api.api_request(URI, check_response_status=[])
    counts = selector.stats.snapshot()
    report.line('counters: %s', ', '.join(
        '%s %s' % (k, counts[k]) for k in sorted(counts)
        if k not in ('last_reason', 'reasons')))
    report.line('reason: %s', counts['last_reason'])
    report.check(during.status_code == 200 and
                 during.content == want.content,
                 "answered 200 by Nova's own path, same body")
    cloud.flags(connection=connection, group='nova_ext_index')
    time.sleep(1.1)
    after = api.api_request(URI, check_response_status=[200])
    report.check(selector.stats.snapshot()['served'] > counts['served'] and
                 after.content == want.content,
                 'back on the index once it is reachable and '
                 'retry_interval has passed')
    code, lines = _manage('status')
    report.line('$ nova-ext-manage index status')
    for line in lines:
        report.line('  %s', line)
