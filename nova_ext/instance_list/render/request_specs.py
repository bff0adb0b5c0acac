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
"""The two request spec fields a server list shows, read without the rest.

From microversion 2.96 Nova's server list shows each server's pinned
availability zone, and from 2.100 its scheduler hints, both from its
RequestSpec; Nova builds the whole RequestSpec object of every listed server
for them (``RequestSpec.get_by_instance_uuids``), which for a page of a
thousand servers takes longer than everything else on the page. These are
read here from the object Nova's loader makes of the stored spec, without
the rest of Nova's build. A spec whose object would hold something else (a
server group, which Nova re-reads and may drop from the hints; a field
absent from the stored spec) is built by Nova as usual; a spec Nova's
loader cannot load fails Nova's list, and the request is Nova's.

Reading and loading the stored specs (a few kilobytes each) is most of
the cost, and specs rarely change: what a spec gave is kept per instance
under a digest of its stored text, and reused while the stored text has
that digest. The instance index follows the specs as it follows the
instances (capture marks every write of one; each read of an instance
reads its spec) and keeps each one's digest: a page of the index reads
its servers' digests with its rows (:func:`digests_from`), and from the
API database only the texts of the specs whose digest it has not kept; a
text found written since the page was read hands the page to Nova.

The specs of other servers (a row whose book holds no spec digest, a
driver that does not follow the specs) are digested in the API database:
where it computes the digests (MySQL, MariaDB, PostgreSQL), a page reads
them alone, and the text of the specs whose digest changed, with their
digest, in the same statement; elsewhere (SQLite) it reads every text and
digests it. Where it also combines them (MySQL, MariaDB), a page first
reads the combination of its digests, one row, and reads them one by one
only when that combination is new.
"""

import contextlib
import contextvars
import hashlib

from nova import objects

from nova_ext import exception
from nova_ext.index.apply import writer
from nova_ext.instance_list import base
from nova_ext.seams.internals import request_specs as stored_specs

#: Specs whose decoding is kept, beyond which all are forgotten.
MAX_KEPT = 100000

#: {instance uuid: (digest of the stored spec, Spec or None: built by Nova)}
_KEPT = {}
#: Pages whose digests are kept, beyond which all are forgotten.
MAX_PAGES = 16
#: {combined digests of a page: [(uuid, digest)] of its specs}
_PAGES = {}


class Spec(object):
    """What the server view reads of a RequestSpec."""

    def __init__(self, instance_uuid, availability_zone, scheduler_hints):
        self.instance_uuid = instance_uuid
        self.availability_zone = availability_zone
        self.scheduler_hints = scheduler_hints


def _decode(uuid, stored):
    """The Spec of a stored spec, or None if Nova must build it.

    :raises Unservable: Nova's loader cannot load the spec. Nova's view
        loads the spec of every server of the page, so Nova's list fails
        on it: Nova answers the request, with its own error.
    """
    try:
        fields = stored_specs.decode(stored)
    except exception.UnsupportedNovaVersion:
        raise
    except Exception as e:
        raise base.Unservable('the request spec of instance %s cannot be '
                              'loaded: %s: %s' % (uuid, type(e).__name__, e))
    return None if fields is None else Spec(uuid, *fields)


def _digest(stored):
    text = stored.encode('utf-8') if isinstance(stored, str) else stored
    return hashlib.blake2b(text, digest_size=16).digest()


def _digests(context, instance_uuids):
    """``[(uuid, digest)]`` of the servers' specs, as the database has them.

    Where the database combines a page's digests in one row, a page whose
    combination was seen gets the digests read with it, without reading
    them again.
    """
    global _PAGES
    combined = stored_specs.combined(context, instance_uuids)
    if combined is not None and combined in _PAGES:
        return _PAGES[combined]
    digests = stored_specs.digests(context, instance_uuids)
    if combined is not None and digests is not None:
        # What was read may be newer than the combination: kept under
        # its own.
        read = stored_specs.combine(digests)
        if read is not None:
            if len(_PAGES) >= MAX_PAGES:
                _PAGES = {}
            _PAGES[read] = digests
    return digests


_DIGESTS = contextvars.ContextVar('nova_ext_request_spec_digests',
                                  default=None)
# The answers given while given(): {(context id, uuids, only): specs}.
_GIVEN = contextvars.ContextVar('nova_ext_request_specs_given',
                                default=None)
#: The digest the index keeps of a server without a spec.
_NO_SPEC = writer.spec_digest(None)
#: Where a page's memo keeps the Specs of its servers (:func:`_specs`).
_MEMO = 'request_specs'


@contextlib.contextmanager
def digests_from(lookup):
    """Within, the specs of servers are those of the digests of ``lookup``.

    :param lookup: a function of uuids, giving ``{uuid: digest}`` of those
        servers as the index holds their specs (``writer.spec_digest``)
        at the moment the page was read; None (or no entry) for a server
        whose spec the index does not follow.
    """
    token = _DIGESTS.set(lookup)
    try:
        yield
    finally:
        _DIGESTS.reset(token)


def _read(context, instance_uuids):
    """``([(uuid, digest, stored spec, kept)], followed)`` of the specs.

    ``kept`` is the ``(digest, Spec)`` kept for the server, or None. Where
    it has the stored spec's digest, the stored text is not read (None).
    ``followed``: whether every digest is the one the page was read with
    (:func:`digests_from`), none read now from the API database.
    """
    lookup = _DIGESTS.get()
    known = lookup(instance_uuids) if lookup is not None else {}
    followed = [u for u in instance_uuids if known.get(u) is not None]
    others = [u for u in instance_uuids if known.get(u) is None]
    found = _read_followed(context, followed, known) if followed else []
    if not others:
        return found, True
    return found + _read_database(context, others), False


def _read_followed(context, instance_uuids, known):
    """:func:`_read` of servers whose digests the index gave.

    The page shows each spec as it was when the page was read: those kept
    by the index's digests of that moment, the others read and checked
    against them.

    :raises Unservable: a spec read was written since the page was read.
        The kept specs are of that moment and this one is not, where Nova
        reads every spec of a page in one statement: Nova answers.
    """
    found, changed = {}, []
    for uuid in instance_uuids:
        if known[uuid] == _NO_SPEC:
            # Nothing to show, and nothing Nova's view would load.
            continue
        digest = ('index', known[uuid])
        kept = _KEPT.get(uuid)
        if kept is not None and kept[0] == digest:
            found[uuid] = (uuid, digest, None, kept)
        else:
            changed.append(uuid)
    if changed:
        read = dict(stored_specs.stored(context, changed))
        for uuid in changed:
            stored = read.get(uuid)
            if writer.spec_digest(stored) != known[uuid]:
                raise base.Unservable('the request spec of instance %s '
                                      'changed while the page was read'
                                      % uuid)
            found[uuid] = (uuid, ('index', known[uuid]), stored, None)
    return [found[uuid] for uuid in instance_uuids if uuid in found]


def _read_database(context, instance_uuids):
    """:func:`_read`, each spec's digest as the API database has it.

    A digest is read with its text, so a spec kept is the one of its
    digest.
    """
    digests = _digests(context, instance_uuids)
    if digests is None:
        return [(uuid, ('text', _digest(stored)), stored, _KEPT.get(uuid))
                for uuid, stored in stored_specs.stored(context,
                                                        instance_uuids)]
    read = {}
    changed = []
    for uuid, digest in digests:
        kept = _KEPT.get(uuid)
        # No digest (a server without SHA2): read, decoded, never kept.
        if (digest is not None and kept is not None and
                kept[0] == ('database', digest)):
            read[uuid] = (uuid, kept[0], None, kept)
        else:
            changed.append(uuid)
    if changed:
        read.update((uuid, (uuid, ('database', digest), stored, None))
                    for uuid, stored, digest in
                    stored_specs.stored_with_digests(context, changed))
    # In the database's order; a spec gone meanwhile is not shown.
    return [read[uuid] for uuid, _ in digests if uuid in read]


_ONLY = contextvars.ContextVar('nova_ext_request_specs_only',
                               default=None)


@contextlib.contextmanager
def only(uuids):
    """Within, the specs of ``uuids`` alone are read, whatever is asked.

    For a page rendered again: its other servers keep the documents the
    first pass found, for which their specs were read.
    """
    token = _ONLY.set(frozenset(uuids))
    try:
        yield
    finally:
        _ONLY.reset(token)


def _specs(context, instance_uuids, memo=None):
    """``([Spec], [uuid of a spec Nova must build])`` of the servers.

    :param memo: the memo of the page's rows (``base.Page.memo``), whose
        digests the specs are read by: the answer for the same servers is
        worked out once, where every one's digest is the page's. The Specs
        are the same then, the specs Nova builds built each time.
    """
    global _KEPT
    wanted = _ONLY.get()
    if wanted is not None:
        instance_uuids = [u for u in instance_uuids if u in wanted]
    if not instance_uuids:
        return [], []
    key = (_MEMO, tuple(instance_uuids))
    if memo is not None and key in memo:
        specs, left = memo[key]
        return list(specs), list(left)
    specs, left = [], []
    if len(_KEPT) > MAX_KEPT:
        _KEPT = {}
    read, followed = _read(context, instance_uuids)
    for uuid, digest, stored, kept in read:
        if kept is not None and kept[0] == digest:
            spec = kept[1]
        else:
            spec = _decode(uuid, stored)
            if digest[1] is not None:
                _KEPT[uuid] = (digest, spec)
        if spec is None:
            left.append(uuid)
        else:
            specs.append(spec)
    if memo is not None and followed:
        memo[key] = (tuple(specs), tuple(left))
    return specs, left


_PAGE = contextvars.ContextVar('nova_ext_request_specs_page',
                               default=None)


@contextlib.contextmanager
def of_page(uuids):
    """Within, the specs of some of ``uuids`` are those given for all.

    For some servers of a page rendered alone, as the whole page would
    render them (``detail_bodies``): Nova's view reads the specs of a
    page once, for all its servers. Within :func:`given`, where the page's
    were given, each of its servers gets that answer's spec.
    """
    page = tuple(uuids)
    token = _PAGE.set((page, frozenset(page)))
    try:
        yield
    finally:
        _PAGE.reset(token)


def get_by_instance_uuids(context, instance_uuids, memo=None):
    """As ``RequestSpec.get_by_instance_uuids``, for the server view.

    Within :func:`given`, the same servers asked again get the same
    answer; within :func:`of_page` too, some of the page's servers.

    :param memo: as :func:`_specs`'.
    """
    given = _GIVEN.get()
    page = _PAGE.get()
    uuids = tuple(instance_uuids)
    # The page itself, unrestricted, is the answer given below.
    if given is not None and page is not None and (
            uuids != page[0] or _ONLY.get() is not None):
        whole = given.get((id(context), page[0], None))
        asked = set(uuids)
        if whole is not None and asked <= page[1]:
            return [spec for spec in whole if spec.instance_uuid in asked]
    asked = (id(context), uuids, _ONLY.get())
    if given is not None and asked in given:
        return given[asked]
    specs, left = _specs(context, instance_uuids, memo)
    if left:
        specs.extend(objects.RequestSpec.get_by_instance_uuids(context, left))
    if given is not None:
        given[asked] = specs
    return specs


@contextlib.contextmanager
def given():
    """Within, a page's specs are read once, whoever asks.

    For a page whose kept body is looked for with the specs its view then
    shows (``detail_bodies``): Nova builds some specs itself (a server
    group, which it reads again each time), so that two builds may differ.
    """
    token = _GIVEN.set({})
    try:
        yield
    finally:
        _GIVEN.reset(token)


def check(context, instance_uuids):
    """Raise Unservable where Nova could not load a server's spec.

    For a list without details, which shows nothing of the specs, but
    fails where Nova's view, loading them, fails. A spec Nova would build
    itself (``_decode`` gives None: a server group) is not built: Nova's
    build loads it as ``_decode`` does, then reads the group again, whose
    absence it tolerates.
    """
    _specs(context, instance_uuids)


def reset():
    """Forget the kept specs (tests)."""
    global _KEPT, _PAGES
    _KEPT = {}
    _PAGES = {}
