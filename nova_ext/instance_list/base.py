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
"""The instance list driver contract (``nova_ext.instance_list.drivers``).

One driver is active per nova-api, chosen by
``[nova_ext_instance_list]driver``. It answers the same question as Nova's
``nova.compute.instance_list.get_instance_objects_sorted``, the only call
through which nova-api lists instances, with the same signature and the
same meaning, so that a driver can be swapped for Nova's path (the ``cells``
driver) without changing a byte of the API response. A driver that also
hands out the rows of Nova's instance query (:class:`RowsDriver`) can have
its pages rendered by nova_ext (``fast_render``).
"""

import abc

from nova_ext import exception


class Unservable(exception.NovaExtError):
    """This query cannot be answered exactly by the driver.

    nova-api then answers it from Nova's own path and counts it. Raised
    before anything is returned, never halfway through a page.
    """


class Unavailable(exception.NovaExtError):
    """The driver's backend is unreachable, too slow or too far behind.

    nova-api answers from Nova's own path, logs one warning and stops asking
    this driver until ``[nova_ext_instance_list]retry_interval`` has passed.
    """


#: A driver's probe (see InstanceListDriver.probe) says its store itself
#: is slow beyond this share of query_timeout, and this many seconds.
SLOW_PROBE, SLOW_PROBE_MIN = 0.1, 0.1


def probe_is_slow(seconds, timeout):
    """Whether a probe that took ``seconds`` says the store is slow."""
    return seconds > max(timeout * SLOW_PROBE, SLOW_PROBE_MIN)


def probe(driver, timeout):
    """Seconds of the faster of up to two probes of ``driver``, or None.

    The second is made only when the first says the store is slow: a pause
    of this process (a garbage collection, other threads holding the
    interpreter) is not the store's, and a store judged slow is switched
    off for every caller.
    """
    took = driver.probe()
    if took is not None and probe_is_slow(took, timeout):
        again = driver.probe()
        if again is not None:
            took = min(took, again)
    return took


class InstanceListDriver(abc.ABC):
    """Lists instances across every cell, sorted and paged."""

    #: Short name used in logs and metrics.
    name = None

    @abc.abstractmethod
    def get_instance_objects_sorted(self, ctx, filters, limit, marker,
                                    expected_attrs, sort_keys, sort_dirs,
                                    cell_down_support=False):
        """Return one page of instances in global sort order.

        Same contract as Nova's
        ``nova.compute.instance_list.get_instance_objects_sorted``.

        :param ctx: the caller's ``nova.context.RequestContext``; a
            non-admin context only sees its own project.
        :param filters: the filters dict nova-api built from the query
            string (already validated and policy-checked).
        :param limit: the maximum number of instances, or None.
        :param marker: the uuid of the last instance of the previous page,
            or None.
        :param expected_attrs: Instance attributes to load.
        :param sort_keys: list of sort keys; Nova appends ``uuid``.
        :param sort_dirs: list of ``asc``/``desc``, one per key.
        :param cell_down_support: True at microversion 2.69 and later, where
            instances of unreachable cells come back as minimal records.
        :returns: a tuple ``(nova.objects.InstanceList, down_cell_uuids)``.
        :raises nova.exception.MarkerNotFound: if ``marker`` is not an
            instance this caller can see.
        :raises Unservable: if this query cannot be answered exactly.
        :raises Unavailable: if the backend cannot answer right now.
        """

    def report_stats(self, counts):
        """Publish this process's list counters (a dict); default: no-op.

        Called every few seconds, by a thread of its own; must not raise.
        """

    def probe(self):
        """Seconds a trivial query of the driver's own store takes, or None.

        Asked after a list took longer than ``query_timeout``, to tell a
        slow store, which is switched off for ``retry_interval``, from a
        request whose own query is slow (a costly regular expression over
        its servers), which is not: no caller can switch the driver off for
        the others. None (the default): the driver cannot tell, and a slow
        list switches it off.
        """
        return None

    def is_available(self):
        """Whether the driver can serve requests right now.

        nova-api asks before each request; a driver that says no is bypassed
        for Nova's own path. The default is always available.
        """
        return True


class Page(list):
    """The rows :meth:`RowsDriver.records` gives, and the state they are of.

    ``generation``: a value naming the state of the driver's store that
    the rows are exactly, as the driver's :meth:`RowsDriver.volumes` takes
    it; None where the rows may be of a later state than any value read.

    ``memo``: where the rows are rows the driver keeps, and hands out
    again for as long as they are unchanged, a dict kept with them, in
    which the renderer keeps what it worked out from exactly those rows;
    None where they are not kept.

    The rows are read, never changed: those the driver keeps are handed
    to every request that lists them, so that a page costs no copy of
    its rows.
    """

    generation = None
    memo = None


def worked_out(memo, name, work):
    """``work()``, kept in a page's memo (``Page.memo``) under ``name``.

    Worked out once for the rows the memo is of; each time where there
    is no memo (None).
    """
    if memo is None:
        return work()
    if name not in memo:
        memo[name] = work()
    return memo[name]


def joined_services(instance, cell_of):
    """Whose services Nova's list joins to ``instance``, or None.

    ``(its cell mapping id, its host)``; None for a deleted instance or
    one on no host, to which Nova joins none.

    :param cell_of: a function of an instance, its cell mapping id.
    """
    if instance.host and not instance.deleted:
        return cell_of(instance), instance.host
    return None


class RowsDriver(InstanceListDriver):
    """A driver whose pages nova_ext can render itself (``fast_render``).

    Besides Instance objects, it hands out the rows of Nova's instance
    query and what Nova's server view reads beside an instance, without
    building Nova's objects, so that the ``servers-list`` API handler can
    render a page with Nova's view code (``nova_ext.instance_list.render``).
    """

    @abc.abstractmethod
    def records(self, ctx, filters, limit, marker, attrs, sort_keys,
                sort_dirs, cell_down_support=False, catch_up=True):
        """One page of rows, as Nova's instance query returns them.

        The arguments are those of :meth:`get_instance_objects_sorted`
        (``attrs`` its ``expected_attrs``), less ``services``, which the
        rows do not join (see :meth:`fill_services`).

        :param catch_up: whether to bring the driver's store up to date
            first; False for more rows of a page read a moment before.
        :returns: a list of dicts, one per instance in the page's order,
            with the joins ``attrs`` ask for; each has an ``id`` from which
            ``nova_ext.index.ids`` gives the cell and the cell-local id. A
            :class:`Page` where the driver knows the state they are of.
        :raises Unservable: as :meth:`get_instance_objects_sorted`.
        :raises Unavailable: as :meth:`get_instance_objects_sorted`.
        """

    def prepare(self, ctx):
        """Begin what the next :meth:`records` of ``ctx`` reads in any order.

        The render path calls it first, before its read of the build
        requests: a driver may begin there, on threads of its own, reads
        whose moment within the request does not matter. By default none.
        """

    @abc.abstractmethod
    def versions(self, uuids):
        """``{uuid: version}``: a value that changes whenever the row does.

        The render cache keeps a server's document under its row's version;
        an instance without one is rendered every time.
        """

    @abc.abstractmethod
    def network_info(self, uuids):
        """``[(uuid, version, stored network info)]`` of their info caches.

        As :meth:`versions`, with the text of each instance's
        ``instance_info_caches.network_info`` (None where it is NULL), read
        together: what Nova's list loads of every server it lists
        (``render.loadable``). An instance without an info cache is left
        out.
        """

    def version_column(self):
        """Where the list query can read each row's version, or None.

        ``(column, key)``: a column of a table in the database the list
        query runs on, from the row whose ``key`` column equals the
        instance's uuid (``nova_ext.seams.internals.orm.Beside``). Read in
        the page's own query, no second read is needed, and each version is
        the one of the row listed. None: :meth:`versions` is asked.
        """
        return None

    def spec_column(self):
        """Where the list query can read each row's request spec digest.

        ``(column, key)`` as :meth:`version_column`: a value that changes
        whenever the server's stored RequestSpec does, as the driver's
        store holds it, or None (or a NULL value for a row) where the
        store does not follow the specs: a page then reads the digests of
        its specs from the API database
        (``nova_ext.instance_list.render.request_specs``).
        """
        return None

    def spec_digests(self, uuids):
        """``{uuid: digest}`` as :meth:`spec_column` reads them, or {}.

        For rows read without it; a uuid left out has none.
        """
        return {}

    @abc.abstractmethod
    def volumes(self, ctx, uuids, generation=None):
        """The volumes of some instances, as Nova's server view shows them.

        As Nova's ``ViewBuilder._get_instance_bdms_in_multiple_cells``.

        :param generation: the ``generation`` of the :class:`Page` that
            lists them, if known: the volumes are of that state or a later
            one, never of an earlier one than the rows'.

        :returns: ``{uuid: [{'volume_id', 'delete_on_termination'}]}``.
        """

    @abc.abstractmethod
    def metadata(self, ctx, uuids, system=False):
        """The (system) metadata rows of some instances, as plain dicts.

        As Nova's manual join of ``metadata`` or ``system_metadata`` in
        ``instance_get_all_by_filters_sort``.

        :returns: ``{uuid: [{'key', 'value', 'deleted'}]}``.
        """

    @abc.abstractmethod
    def fill_services(self, ctx, instances, cell_of):
        """Give each instance its host's services, as Nova's join does.

        The ``services`` that Nova's list joins to live instances, read by
        its view for ``host_status``.

        :param instances: Instance objects or rendered rows.
        :param cell_of: a function of an instance, its cell mapping id.
        :raises Unservable: when a cell does not give them.
        """
