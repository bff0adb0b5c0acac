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
documents: the ports of 150 servers per request, one request after
another (seven, each waited for, for a page of 1000), then one request
for the groups of all those ports. nova_ext sends the same requests as
soon as the page's servers are listed: the chunks of ports at once, one
per task on a pool of ``[nova_ext_instance_list]neutron_requests_at_once``
threads in each nova-api process, then, once the last chunk is in, the
request for their groups; the page is rendered meanwhile, and the view
takes the answer where Nova's asks for it (``view.ViewBuilder``). Each
request of the pool carries the page request's context (its request id in
the logs) and, where osprofiler traces it, its trace: Neutron's part of a
traced request stays in its trace.

Neutron is asked for every page, with the caller's token, as Nova asks it,
unless its notifications are read (``neutron_feed_url``,
neutron_feed.py): then the answer to a page is kept, per token and page of
servers, and given again for as long as the feed proves that Neutron made
no change since it was asked for. A page whose servers were on pages kept
for the same token at the same epoch (a name sort after a rename, a shorter
page) has theirs from those answers, and Neutron is asked for the others
alone. What Nova's lookup gives a server is a function of Neutron's state,
the token and that server: its ports, each its groups in the port's order,
named as the token sees them. The ports of one server come back in the
same order whichever servers are asked with it (the database's order of
one ``device_id``), so an answer made of such parts is the one Nova's
would be for the whole page.
"""

from concurrent import futures
import functools
import threading

import futurist
from oslo_utils import importutils

from nova_ext.instance_list.render import neutron_answers
from nova_ext.instance_list.render import neutron_feed
from nova_ext import per_process
from nova_ext.seams.internals import security_group_api

# Nova's profiling is optional (nova[osprofiler]): traces are carried where
# it is installed, as Nova's own thread pools carry them.
profiler = importutils.try_import('osprofiler.profiler')

_POOLS = per_process.Registry()


def _pool(size):
    """This process's pool for Neutron's requests, made on first use."""
    return _POOLS.get(size, lambda: futurist.ThreadPoolExecutor(
        max_workers=size))


class _PageGroups(object):
    """The security groups of one page's servers, for Nova's view.

    :ivar context: the request's context, whose token asks.
    :ivar uuids: the page's servers, in the page's order.
    """

    #: Whether the answer is one Neutron gave an earlier page (True), one
    #: asked for now while Neutron's feed is read (False), or asked for
    #: with no feed (None).
    kept = None

    def __init__(self, context, uuids):
        self.context = context
        self.uuids = list(uuids)
        self._given = None

    def bindings(self, context, servers):
        """Nova's ``{server uuid: [group]}`` for ``servers``' documents.

        This page's answer, when these are its servers and ``context`` its
        request's; otherwise Neutron is asked for theirs now, as Nova asks.
        The page's answer is the same each time it is given: the one its
        kept body is looked for with (``detail_bodies``) is the one its
        documents show.

        :raises: what Nova's lookup raises.
        """
        if (context is not self.context or
                [server['id'] for server in servers] != self.uuids):
            return security_group_api.bindings(context, servers)
        if self._given is None:
            self._given = self._answer(context, servers)
        return self._given

    def page(self):
        """This page's answer, as :meth:`bindings` gives it."""
        return self.bindings(self.context,
                             [{'id': uuid} for uuid in self.uuids])

    def read(self):
        """This page's answer, to read, not to change.

        The groups :meth:`page` gives, without the lists of their own that
        a kept answer gives each page's documents.
        """
        return self.page()

    def part(self, uuids):
        """The groups of some of the page's servers, rendered alone.

        As the whole page would show them: this page's answer, for those
        servers (``detail_bodies``).
        """
        return _Part(self, uuids)

    def _answer(self, context, servers):
        raise NotImplementedError()


class _Part(object):
    """Some servers of a page, with the page's groups (``part``)."""

    def __init__(self, page, uuids):
        self._page = page
        self._uuids = list(uuids)

    def bindings(self, context, servers):
        if (context is not self._page.context or
                [server['id'] for server in servers] != self._uuids):
            return security_group_api.bindings(context, servers)
        given = self._page.page()
        return {uuid: given[uuid] for uuid in self._uuids if uuid in given}


class Lookup(_PageGroups):
    """The security groups of one page's servers, being asked of Neutron."""

    def __init__(self, pool, context, uuids, per, keep=None, known=None):
        """Send the requests for ports, ``per`` servers each, to ``pool``.

        :param keep: called with Neutron's answer once it is in, if it is.
        :param known: ``{uuid: groups, or None}`` of servers whose answer
            is known (``neutron_answers.Answers.known``): Neutron is asked
            for the others alone.
        """
        super().__init__(context, uuids)
        self._trace = trace_info()
        self._lock = threading.Lock()
        self._groups = futures.Future()
        self._keep = keep
        self._known = known or {}
        if keep is not None:
            self.kept = False
        asked = [uuid for uuid in self.uuids if uuid not in self._known]
        chunks = [asked[n:n + per] for n in range(0, len(asked), per)]
        #: Each chunk's ports, or the error its request raised.
        self._read = [None] * len(chunks)
        self._left = len(chunks)
        if not chunks:
            # Nothing left to ask: the known answers are the page's.
            self._answered(_with_known({}, self._known))
        for n, chunk in enumerate(chunks):
            pool.submit(self._read_ports, n, chunk)

    def _read_ports(self, n, uuids):
        try:
            self._read[n] = (None, self._ask(security_group_api.ports,
                                             uuids))
        except Exception as e:
            self._read[n] = (e, None)
        with self._lock:
            self._left -= 1
            last = not self._left
        if last:
            # The thread that read the last chunk asks for the groups
            # itself: a task that waited for the others, or one sent to the
            # pool from a task, could wait for a thread the pool is short of.
            self._read_groups()

    def _read_groups(self):
        try:
            ports = []
            for error, read in self._read:
                if error is not None:
                    raise error
                ports.extend(read)
            groups = _with_known(
                self._ask(security_group_api.bindings_of_ports, ports),
                self._known)
        except Exception as e:
            self._groups.set_exception(e)
        else:
            self._answered(groups)

    def _answered(self, groups):
        if self._keep is not None:
            self._keep(groups)
        self._groups.set_result(groups)

    def _ask(self, function, *args):
        # The pool's thread logs with the request's id, as the request would.
        self.context.update_store()
        return traced(self._trace, function, self.context, *args)

    def _answer(self, context, servers):
        return self._groups.result()


class Kept(_PageGroups):
    """Neutron's answer to an earlier request for the same page."""

    kept = True

    def __init__(self, context, uuids, groups):
        super().__init__(context, uuids)
        self._groups = groups

    def read(self):
        return self._groups

    def _answer(self, context, servers):
        # Each page's documents get lists of their own.
        return {uuid: [dict(group) for group in found]
                for uuid, found in self._groups.items()}


class Asked(_PageGroups):
    """Neutron asked by the view, as Nova asks, its answer then kept.

    Asked for the servers whose answer is not ``known`` (as
    :class:`Lookup`'s).
    """

    kept = False

    def __init__(self, context, uuids, keep, known=None):
        super().__init__(context, uuids)
        self._keep = keep
        self._known = known or {}

    def _answer(self, context, servers):
        groups = _with_known(security_group_api.bindings(
            context, [server for server in servers
                      if server['id'] not in self._known]), self._known)
        self._keep(groups)
        return groups


def _with_known(asked, known):
    """Neutron's answer for some servers, with the others' known answers.

    Each known server's groups as lists of their own: they are another
    page's answer, kept.
    """
    groups = {uuid: [dict(group) for group in found]
              for uuid, found in known.items() if found}
    groups.update(asked)
    return groups


def start(conf, context, uuids):
    """Start asking Neutron for the groups of the servers ``uuids``.

    With Neutron's feed read, an answer kept for the same token and page
    while the feed shows no change is given again (:class:`Kept`); so are
    those of its servers on other pages kept for the token meanwhile, and
    Neutron is asked for the others alone.

    :param context: the context Nova's view asks with (the request's).
    :returns: the page's groups (a :class:`Lookup`, :class:`Kept` or
        :class:`Asked`), or None when ``neutron_requests_at_once`` is 1
        with no feed, or the page is empty: the view then asks as Nova's
        does, when it adds the groups.
    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    group = conf.nova_ext_instance_list
    if not uuids:
        return None
    keep = known = None
    feed = neutron_feed.feed(conf)
    # The token is the caller's view of Neutron: what its policy shows.
    if feed is not None and context.auth_token:
        # Confirmed before Neutron is asked: a change after this point
        # makes a later epoch, under which this answer is not given.
        epoch = feed.confirm(group.neutron_feed_wait)
        if epoch is not None:
            epoch = (feed.ident, epoch)
            answers = neutron_answers.answers(group.neutron_answers_kept)
            token = context.auth_token
            groups = answers.get(token, uuids, epoch)
            if groups is not None:
                return Kept(context, uuids, groups)
            keep = functools.partial(answers.put, token, uuids, epoch)
            known = answers.known(token, uuids, epoch)
            if known.keys() >= set(uuids):
                groups = _with_known({}, known)
                keep(groups)
                return Kept(context, uuids, groups)
    size = group.neutron_requests_at_once
    if size <= 1:
        return (Asked(context, uuids, keep, known) if keep is not None
                else None)
    return Lookup(_pool(size), context, uuids,
                  security_group_api.ids_per_request(), keep=keep,
                  known=known)


def trace_info():
    """The osprofiler trace of this thread's request, or None."""
    prof = profiler.get() if profiler is not None else None
    if prof is None:
        return None
    return {'hmac_key': prof.hmac_key, 'base_id': prof.get_base_id(),
            'parent_id': prof.get_id()}


def traced(trace, function, *args):
    """``function(*args)`` within ``trace`` (trace_info()), if any.

    The pool's thread leaves it as it found it, untraced: osprofiler keeps
    a thread's trace until it is cleaned, and would otherwise lend it to
    the next request's task, or keep that request's own out.
    """
    if trace is None or profiler is None:
        return function(*args)
    profiler.clean()
    profiler.init(**trace)
    try:
        return function(*args)
    finally:
        profiler.clean()


def shutdown():
    """Stop the pools' threads, once they have done their work (tests)."""
    neutron_answers.forget()
    for pool in _POOLS.clear():
        pool.shutdown(wait=True)
