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

from oslo_config import cfg

instance_list_group = cfg.OptGroup(
    'nova_ext_instance_list',
    title='nova_ext instance list options',
    help="""
Options for how nova-api lists servers (``GET /servers`` and
``GET /servers/detail``) when the nova_ext paste filter is in the pipeline.
""")

instance_list_opts = [
    cfg.StrOpt(
        'driver',
        default='cells',
        help="""
The instance list driver, by entry point name in the
``nova_ext.instance_list.drivers`` namespace.

``cells`` is Nova's own path (query every cell database and merge the
results) and leaves the request to Nova untouched. It is also the fallback
of every other driver.

``index`` answers from nova_ext's global instance index (see
``[nova_ext_index]``), with one query whatever the number of cells.
"""),
    cfg.IntOpt(
        'retry_interval',
        default=60,
        min=1,
        help="""
Seconds nova-api waits, after the driver failed (unreachable, slower than
its timeout, or too far behind), before it asks that driver again.

In between, every list request is answered by Nova's own path, so a broken
index costs one warning and no errors.
"""),
    cfg.BoolOpt(
        'fast_render',
        default=False,
        help="""
Render ``GET /servers`` and ``GET /servers/detail`` answered by the ``index``
driver straight from the index rows.

Nova's own query validation, policy checks and server view code still make
every answer, but they are handed the index rows themselves instead of Nova
Instance objects built from them, and the response is not validated again
against Nova's response schemas (``[api]response_validation``), which is
where most of a large listing's time goes. The bodies are byte-identical to
Nova's (nova_ext's functional tests compare them for every microversion,
filter, sort and role). A page that holds build requests, and filters by IP
address, are rendered by Nova as usual. Needs ``driver = index``.

Read when nova-api starts: restart it (or reload its WSGI server's workers)
to change it.
"""),
    cfg.IntOpt(
        'render_cache_size',
        default=0,
        min=0,
        help="""
With ``fast_render``, how many rendered server documents each nova-api
process keeps, for ``GET /servers/detail`` and ``GET /servers``. 0 keeps
none.

A server's detailed document is what Nova's server view makes of its index
row for one shape of request (microversion, URL, the caller's policy
decisions), with its availability zone, volumes and request spec. It is
reused until the index writes the row again or any of those change, so a
page of servers that did not change is not rendered again; each document
takes a few kilobytes. What Nova adds to a page per request
(``host_status``, security groups, links) is still computed per request.
A server's document in a list without details (its id, name and links) is
reused for as long as its name and the request's URL stay the same.
Read when nova-api starts.
"""),
    cfg.IntOpt(
        'page_cache_size',
        default=0,
        min=0,
        help="""
With ``fast_render``, how many pages of index rows each nova-api process
keeps: for ``GET /servers``, and for ``GET /servers/detail`` with
``render_cache_size`` (a detailed page counts twice: its rows and its
volumes). 0 keeps none.

With ``render_cache_size``, a list without details also keeps its body,
written, for as many pages (about 350 bytes a server): it answers a
request with the same URL, microversion, administrator flag and link
options whose page has the same rows.

A page is what the index query gave for one query (filters, sort, limit,
marker, the caller's project and role); it answers the same query again,
without querying, for as long as the index is unchanged. Any change to a
row a list reads, from any process, moves the index's generation and
records which servers changed; the next request reads those again and
brings the page up to date where they alone tell it, else lists anew.
What a list reads outside the index (build requests, the cells' health,
the changes recorded but not applied yet, the marker's instance mapping)
is still read by every request. A page of a
thousand servers takes about a megabyte. Read when nova-api starts.
"""),
    cfg.IntOpt(
        'detail_body_cache_size',
        default=0,
        min=0,
        help="""
With ``fast_render`` and ``render_cache_size``, how many written bodies of
``GET /servers/detail`` each nova-api process keeps. 0 keeps none.

A detailed body is kept under what Nova's view reads to make it, each
read by the request as Nova's view would: the request's shape (URL,
microversion, the caller's policy decisions), and of each server of the
page its index row's version, its request spec (its digest, and the
pinned zone and hints the view is given), availability zone and
volumes, its ``host_status`` (with the times of its host's service) and
its security groups. A request that reads the same is answered with the
kept text, without a server rendered or written. Where some servers read
otherwise (changed, or their host gone down) and the page has the same
servers in the same order as the last body given for the same request,
only their documents are rendered again and written into that body;
anything else renders the page as before. No
body is kept while ``neutron_requests_at_once`` is 1 without
``neutron_feed_url`` (Nova's view then asks Neutron itself). A body
takes about 2 kilobytes a server: 2 MB for a page of a thousand; the
last body of each request also keeps what its servers read, a few
hundred bytes a server. Read when nova-api starts.
"""),
    cfg.BoolOpt(
        'gc_freeze',
        default=False,
        help="""
With ``fast_render``, once a nova-api process has rendered its first list,
move every object it holds at that moment (Nova's code, configuration,
database mappings: some 300,000 objects) out of the reach of Python's
garbage collector (``gc.freeze``), so that each full collection walks only
the objects made since.

Without it, under a steady stream of large lists, a full collection comes
every second or two in each nova-api process and holds up the request it
runs in: 150 to 200 ms on a 2-core machine, most of the 99th percentile of
a list of a thousand servers. With it, the same collections take 5 to 20
ms. The first list a process renders takes longer by one full collection,
made before the objects are frozen. Frozen objects are still freed when
nothing refers to them; only reference cycles among them are never
collected, and a process's objects of its start rarely become such
garbage. Read when nova-api starts.
"""),
    cfg.IntOpt(
        'neutron_requests_at_once',
        default=4,
        min=1,
        help="""
With ``fast_render``, how many of the Neutron requests for the security
groups of a ``GET /servers/detail`` page each nova-api process sends at
once.

Nova's view asks Neutron for the ports of a page's servers, 150 servers per
request, one request after another once the page is rendered, then for
the groups of all those ports. With more than 1, nova_ext sends the same
requests as soon as the page is listed, up to this many requests for
ports at once on threads of the process (shared by its requests), then
the one for their groups, and renders the page meanwhile. The answer is
the same, and so are the requests: Neutron is asked for every page, with
the caller's token. The threads are shared by the process's requests: a
Neutron that does not answer holds them, and the detailed pages behind
them wait, as long as it holds Nova's own requests ([neutron]timeout). 1
asks as Nova does. Read when nova-api starts.
"""),
    cfg.StrOpt(
        'neutron_feed_url',
        secret=True,
        help="""
The oslo.messaging transport URL (``rabbit://``) of the RabbitMQ that
Neutron sends its notifications to (Neutron's
``[oslo_messaging_notifications]transport_url``, or its
``[DEFAULT]transport_url``). Unset (the default), Neutron is asked for
the security groups of every ``GET /servers/detail`` page, as Nova asks.

Set, with ``fast_render``, each nova-api process reads Neutron's
notifications on a queue of its own and keeps the security groups Neutron
gave for a page (per caller's token and page of servers). A later request
for the same page reuses them when Neutron's feed proves that nothing that
can alter them changed since they were asked for: the request sends a
marker through the feed and waits until it is read back, so every
notification Neutron had sent before is counted first (Neutron sends them
with publisher confirms before it answers the change). A port, security
group, security group rule, RBAC policy or network notification, or a lost
connection to RabbitMQ, and the next request asks Neutron again; while such
a change is under way (``neutron_feed_call_timeout``), every request asks
Neutron and keeps nothing. Neutron must send notifications
(``[oslo_messaging_notifications]driver = messagingv2``); until it has sent
its first, its exchange does not exist and the pages ask Neutron. Read
when nova-api starts.
"""),
    cfg.StrOpt(
        'neutron_feed_exchange',
        default='neutron',
        help="""
The exchange of Neutron's notifications (Neutron's ``control_exchange``).
"""),
    cfg.ListOpt(
        'neutron_feed_topics',
        default=['notifications'],
        help="""
The topics of Neutron's notifications (Neutron's
``[oslo_messaging_notifications]topics``).
"""),
    cfg.FloatOpt(
        'neutron_feed_wait',
        default=1.0,
        min=0.01,
        help="""
Seconds a detailed page waits for its marker to come back through
Neutron's feed before it asks Neutron instead.
"""),
    cfg.FloatOpt(
        'neutron_feed_call_timeout',
        default=300.0,
        min=0.0,
        help="""
Seconds a change Neutron notified the start of (``port.update.start``,
...) counts as under way while its end (``port.update.end``) has not come,
and seconds after each nova-api process binds its queue to Neutron's
notifications. Meanwhile no page keeps or reuses Neutron's answer: a change
shows in Neutron's answers from its commit, which comes between the two,
and Neutron sends no end for a request that fails. Set it above the
longest a Neutron API request that changes ports, security groups, RBAC
policies or networks can take (Neutron binds a port before it sends the
end of its update; OVN's ``ovsdb_timeout`` is 180 s): a change that
commits after its start has counted for this long shows in pages only
once its end comes. Read when nova-api starts.
"""),
    cfg.IntOpt(
        'neutron_answers_kept',
        default=64,
        min=1,
        help="""
With ``neutron_feed_url``, how many pages' security groups each nova-api
process keeps, least recently used dropped first. Read when nova-api
starts.
"""),
    cfg.BoolOpt(
        'reuse_services',
        default=True,
        help="""
With ``driver = index``, keep in each nova-api process the nova-compute
services that pages read from the cells for ``host_status`` (shown to
admins), and read a host's services again only when its status could be
other than what they give.

``host_status`` is computed from ``forced_down``, ``disabled`` and the last
heartbeat. The flags change only with a ``service.*`` notification, which
the index's consumers (the in-process ``index`` consumer or
``nova-ext-indexer``) record; a heartbeat only moves forward, so services
that showed a host up show it up as a fresh read would, as long as their
heartbeat is recent enough. Services are read again when their host has a
recorded change, when their last heartbeat is more than half of
``[DEFAULT]service_down_time`` old (the other half is left for the request
that renders them, so the status cannot expire before Nova's view reads
the clock), and in any case ``service_down_time`` seconds after they were
read, so a lost notification costs at most that long. Only with Nova's
``db`` servicegroup driver; ``false`` reads every page's services from
their cells. Read when nova-api starts.
"""),
]


def register_opts(conf):
    conf.register_group(instance_list_group)
    conf.register_opts(instance_list_opts, group=instance_list_group)


def list_opts():
    return {instance_list_group: instance_list_opts}
