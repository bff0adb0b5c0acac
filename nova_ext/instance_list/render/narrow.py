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
"""Nova's instance list query over the index, reading a few columns.

With the render cache, the rows of a page are needed only to know which
servers are on it, in what order, and what the documents' keys and Nova's
per-page additions read (host, availability zone, ...): the documents
come from the cache. A list without details (``GET /servers``) renders
each server from its uuid and name alone (LISTED). Nova's
``instance_get_all_by_filters_sort`` still builds the query (every filter,
sort and marker rule is Nova's), but within :func:`narrowed` the list query
it runs on the index selects only those columns and hands back plain dicts
instead of ORM objects, which is where most of its time goes for a page of
a thousand servers (``nova_ext.seams.internals.orm``, installed by
:func:`attach`).

Only the list query is narrowed; lookups such as the marker's are not.
Rows to render are read in full afterwards.
"""

import contextlib
import contextvars

from nova_ext.instance_list.render import rows
from nova_ext.seams.internals import instance_lister
from nova_ext.seams.internals import orm

#: Columns every narrowed row of a detailed page has: what
#: rows.IndexedInstance reads, the render cache's keys, host_status and the
#: collection links.
COLUMNS = ('id', 'uuid', 'deleted', 'project_id', 'user_id', 'host',
           'availability_zone', 'vm_state', 'task_state', 'hidden',
           'access_ip_v4', 'access_ip_v6', 'created_at', 'updated_at',
           'deleted_at', 'launched_at', 'terminated_at')
#: Columns a list without details reads: Nova's view of it shows each
#: server's uuid and name; the page drops duplicates and looks up its
#: tombstones (``deleted``); Nova's list fails on an access IP its
#: Instance refuses (``rows.REFUSABLE``), which a kept body is keyed by
#: (``page_bodies``).
LISTED = ('id', 'uuid', 'deleted', 'display_name') + rows.REFUSABLE
#: The key of a narrowed row's version, where it is read with the row.
VERSION = 'nova_ext_render_version'
#: The key of its request spec's digest, where it is read with the row.
SPEC = 'nova_ext_spec_digest'
_ACTIVE = contextvars.ContextVar('nova_ext_narrowed', default=None)


@contextlib.contextmanager
def narrowed(columns, sort_keys, version=None, spec=None):
    """Within, the list query reads ``columns`` and the sort keys.

    :param columns: COLUMNS for a detailed page, LISTED for a list.
    :param sort_keys: the request's; Nova's own are read too, so that a
        kept page can tell where a changed row sorts (``page_patch``).
    :param version: the driver's ``version_column()``: each row's version
        is read with it, in the same query, under VERSION.
    :param spec: the driver's ``spec_column()``: the same, under SPEC.
    """
    columns = tuple(sorted(
        set(columns) | set(instance_lister.sort_keys(sort_keys, None))))
    if version is not None:
        columns += (orm.Beside(VERSION, *version),)
    if spec is not None:
        columns += (orm.Beside(SPEC, *spec),)
    token = _ACTIVE.set(columns)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def attach():
    """Narrow the list queries run within :func:`narrowed`, from now on.

    :returns: whether they will be (not on an untested Nova).
    """
    return orm.attach_narrowing(_ACTIVE.get)


def detach():
    """Read every list query whole again (tests)."""
    orm.detach_narrowing()
