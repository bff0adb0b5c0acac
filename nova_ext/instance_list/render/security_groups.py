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
"""A detailed page's security groups, asked of Neutron early and at once.

Nova's view asks Neutron for them last, once it has made the page's
documents, in requests for the ports of 150 servers each, one after
another: seven requests, each waited for, for a page of 1000. nova_ext
makes the same requests as soon as the page's servers are listed, one
chunk of servers per task on a pool of
``[nova_ext_instance_list]neutron_requests_at_once`` threads in each
nova-api process, while the page is rendered; the view takes their
answers where Nova's asks for them (``view.ViewBuilder``). Nothing is kept
past the page: Neutron is asked for every page, with the caller's token,
as Nova asks it.
"""

import threading

import futurist

from nova_ext.seams.internals import security_group_api

_LOCK = threading.Lock()
_POOL = {}


def _pool(size):
    """This process's pool for Neutron's requests, made on first use."""
    with _LOCK:
        if size not in _POOL:
            _POOL[size] = futurist.ThreadPoolExecutor(max_workers=size)
        return _POOL[size]


class Lookup(object):
    """The security groups of one page's servers, being asked of Neutron.

    :ivar context: the request's context, whose token asks.
    :ivar uuids: the page's servers, in the page's order.
    """

    def __init__(self, context, uuids, futures):
        self.context = context
        self.uuids = uuids
        self._futures = futures

    def bindings(self, context, servers):
        """Nova's ``{server uuid: [group]}`` for ``servers``' documents.

        The answers asked for when the page was listed, when these are
        its servers; otherwise Neutron is asked for theirs now.

        :raises: what Nova's lookup raises, from the first chunk whose
            request failed.
        """
        if (context is not self.context or
                [server['id'] for server in servers] != self.uuids):
            return security_group_api.bindings(context, servers)
        found = {}
        for future in self._futures:
            found.update(future.result())
        return found


def start(conf, context, uuids):
    """Start asking Neutron for the groups of the servers ``uuids``.

    :param context: the context Nova's view asks with (the request's).
    :returns: a :class:`Lookup`, or None when
        ``neutron_requests_at_once`` is 1: the view then asks as Nova's
        does, when it adds the groups.
    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    size = conf.nova_ext_instance_list.neutron_requests_at_once
    if size <= 1:
        return None
    per = security_group_api.ids_per_request()
    pool = _pool(size)
    futures = [pool.submit(_ask, context, uuids[n:n + per])
               for n in range(0, len(uuids), per)]
    return Lookup(context, list(uuids), futures)


def _ask(context, uuids):
    # The pool's thread logs with the request's id, as the request would.
    context.update_store()
    return security_group_api.bindings(
        context, [{'id': uuid} for uuid in uuids])


def shutdown():
    """Stop the pools' threads (tests)."""
    with _LOCK:
        pools = list(_POOL.values())
        _POOL.clear()
    for pool in pools:
        pool.shutdown(wait=True)
