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
"""Server documents rendered once per version of their index row.

Nova's view turns an instance into the same document for as long as the
instance, the request's shape and a few facts read beside the row stay
the same. Under ``fast_render`` the index rows stand for the instances,
and the index records when it last wrote each (``read_at`` in its book),
so a document rendered by Nova's ``ViewBuilder.show`` can be reused for
any later request that would hand ``show`` the same inputs:

- the row: its uuid and ``read_at`` (any write, from any notification or
  reconcile, changes it); a row without ``updated_at`` is never cached,
  since Nova shows the time of each request as its ``updated``;
- the request: microversion, the URL the links are built from, whether
  the caller is an administrator (fault details), every ``show_*`` flag
  Nova's list view passes (policy decisions included);
- what ``show`` reads beside the row: the server's availability zone
  (aggregates; once per page for each host and zone of the row), its
  volumes, and its request spec's pinned availability zone and scheduler
  hints;
- the options ``show`` reads.

What Nova adds to the documents of a page afterwards (``host_status``,
security groups, links to the next page) is computed per request as
before. A miss is rendered by Nova's view and kept; entries are evicted
least recently used first.

A server's document in a list without details (``ViewBuilder.basic``:
its uuid, its name, links built from the request) is kept in the same
cache under the request's part of the key, the uuid and the name
(:func:`listed_key`): nothing else of the row is shown.
"""

import datetime

from nova import availability_zones
from nova import conf as nova_conf
from oslo_serialization import jsonutils

from nova_ext.instance_list import lru
from nova_ext.instance_list.render import encode
from nova_ext.instance_list.render import rows

CONF = nova_conf.CONF

#: ``show``'s keyword arguments, whose values are part of a key.
_FLAGS = ('extend_address', 'show_extra_specs', 'show_AZ',
          'show_config_drive', 'show_extended_attr', 'show_host_status',
          'show_keypair', 'show_srv_usg', 'show_sec_grp',
          'show_extended_status', 'show_extended_volumes',
          'cell_down_support', 'show_server_groups', 'show_user_data')


class RenderCache(lru.LRUCache):
    """Server documents by :func:`key` and :func:`listed_key`."""


_CACHE = lru.PerProcess(RenderCache, 'render_cache_size')
#: ``cache(conf)``: this process's cache; None if its size is 0. Switched
#: off, the documents are kept, unused, until the size changes: switching
#: it back on finds them still valid, since every key holds the version of
#: its row.
cache = _CACHE.of
#: Forget this process's cache (tests).
reset = _CACHE.reset


def _options():
    # What Nova 34's server view and its link helpers read of nova.conf.
    return (CONF.api.compute_link_prefix, CONF.api.glance_link_prefix,
            CONF.instance_name_template)


def request_key(request, project_in_url):
    """What a request contributes to every key of its page."""
    context = request.environ['nova.context']
    return (request.api_version_request.get_string(),
            request.application_url, project_in_url,
            bool(getattr(context, 'is_admin', False)), _options())


def key(request_part, context, instance, kwargs, zones):
    """The key of ``show(request, instance, **kwargs)``, or None.

    None when the row's version is unknown, or when the document holds
    the time of the request: Nova shows a server never updated (no
    ``updated_at`` yet) as updated now. Nothing is cached then.

    :param zones: a dict shared by the keys of one page, in which the
        availability zone of each host (and zone of the row, which Nova's
        lookup compares with it) is looked up once; an empty one asks
        Nova's lookup for this key alone.
    """
    version = getattr(instance, 'render_version', None)
    if version is None or rows.unset(instance, 'updated_at'):
        return None
    volumes = shown_volumes(kwargs.get('bdms') or {}, instance.uuid)
    # The request spec's zone and hints (a dict of lists of strings), or
    # the view's markers of their absence: repr tells any two apart.
    return (request_part, instance.uuid, version,
            tuple(map(kwargs.get, _FLAGS)),
            zone(context, instance, zones),
            volumes, repr(kwargs.get('provided_az')),
            repr(kwargs.get('provided_sched_hints')))


def shown_volumes(bdms, uuid):
    """What a server's document shows of its volumes, of the page's bdms.

    :param bdms: ``{instance uuid: [mapping]}``, as the view is given them.
    """
    return tuple((b['volume_id'], b['delete_on_termination'])
                 for b in bdms.get(uuid, ()))


def zone(context, instance, zones):
    """Nova's availability zone of ``instance``, once per page per input.

    :param instance: an Instance, or an index row (a dict), which Nova's
        lookup is given as an ``IndexedInstance``.
    """
    # All Nova's lookup reads of the instance.
    read = (instance.get('host'), instance.get('availability_zone'))
    zone = zones.get(read, zones)
    if zone is zones:
        if isinstance(instance, dict):
            instance = rows.IndexedInstance(instance, None, [], [])
        zone = zones[read] = (
            availability_zones.get_instance_availability_zone(
                context, instance))
    return zone


def listed_key(request_part, instance):
    """The key of ``basic(request, instance)``, or None.

    Nova's view of a server in a list without details is its uuid, its
    name and links made from the request. None for a server whose row
    has no name (Nova's partial document of a down cell's server).
    """
    if 'display_name' not in instance:
        return None
    return ('listed', request_part, instance.uuid, instance.display_name)


def kept(doc):
    """A copy of the document ``doc`` to keep, its datetimes written out.

    Nova's serialiser (``jsonutils.dumps``) writes each value JSON has no
    type for as ``jsonutils.to_primitive`` makes it; the server view leaves
    datetimes (``OS-SRV-USG:launched_at``, ...) to it. Kept written, the
    document costs no conversion on each request, and its bytes in a body
    are the same; the body writes it from its JSON text, kept with it once
    written (``encode.Kept``).
    """
    return encode.Kept((name, (jsonutils.to_primitive(value)
                               if isinstance(value, datetime.datetime)
                               else value))
                       for name, value in doc.items())
