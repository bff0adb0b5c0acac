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
"""What ``nova-ext-bench list`` asks, and the targets it reports against."""

import collections
import itertools

STOCK, INDEX, FAST, CACHED, CHURN = (
    'stock', 'index', 'fast', 'cached', 'churn')
PATHS = (STOCK, INDEX, FAST, CACHED, CHURN)
#: The index paths, each compared with STOCK.
INDEXED = (INDEX, FAST, CACHED, CHURN)
#: The paths nova_ext renders itself (``fast_render``).
RENDERED = (FAST, CACHED, CHURN)
#: The paths with the render cache on; CHURN is CACHED with changes
#: recorded before each request (listchurn.py).
WITH_CACHE = (CACHED, CHURN)
#: Documents the render cache holds in the ``cached`` path.
CACHE_SIZE = 100000
LIMIT = 1000
#: The share of a page's servers changed before each ``churn`` request,
#: and the seed of the choice (the same sets in every run).
CHURN_SHARE, CHURN_SEED = 0.1, 0
#: Untimed requests per query and path before the timed ones; the first is
#: the one whose body is compared.
WARMUP_REQUESTS = 2
OPTIONS = {'nova_ext_instance_list': {'driver': 'index',
                                      'fast_render': True}}

#: The clones' owners. The first is the harness's project, the one the
#: non-admin client is a member of; so that member sees a quarter of the
#: servers, spread over every cell.
OTHER_PROJECTS = ('0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b01',
                  '0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b02',
                  '0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b03')

Query = collections.namedtuple('Query', 'name who url')


def _queries():
    queries = []
    for endpoint, who, sort in itertools.product(
            ('detail', 'index'), ('admin', 'project'), ('', 'display_name')):
        path = '/servers/detail' if endpoint == 'detail' else '/servers'
        params = ['limit=%d' % LIMIT]
        if who == 'admin':
            params.insert(0, 'all_tenants=1')
        if sort:
            params.append('sort_key=%s' % sort)
        name = '%s %s%s' % (endpoint, who, ' by name' if sort else '')
        queries.append(Query(name, who, '%s?%s' % (path, '&'.join(params))))
    return tuple(queries)


QUERIES = _queries()
#: The query of the plot and of the targets.
HEADLINE = 'detail admin'

#: The project's targets for the list (see
#: doc/source/contributor/benchmarks.rst).
FLATNESS_TARGET = 1.2
SPEEDUP_TARGET, SPEEDUP_CELLS = 10.0, 8
BARE_TARGET = 5.0
