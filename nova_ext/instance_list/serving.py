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
"""Choosing, per list request, between the configured driver and Nova's.

This is what nova-api calls instead of Nova's
``get_instance_objects_sorted``. Whatever goes wrong with a driver, the
request is answered by Nova's own path: a query the driver cannot answer
exactly is handed over (and counted); a driver that fails, is unreachable,
too slow or too far behind is handed over and *latched off* for
``[nova_ext_instance_list]retry_interval`` seconds, with one warning, so a
broken index costs neither errors nor a timeout per request.

The API seam (``nova_ext.seams.api``) makes the :class:`Selector`,
routes Nova's function through it and records both here
(:func:`attached`); the rest of nova_ext asks :func:`selector` and
:func:`stock`.
"""

import atexit
import contextlib
import copy
import re
import threading
import time
import weakref

import futurist
from oslo_log import log as logging

from nova_ext import instance_list
from nova_ext.instance_list import base

LOG = logging.getLogger(__name__)

# Nova's own function and the Selector nova-api's list goes through, while
# the API seam has the list routed; the Selector is None for as long as the
# seam puts Nova's function back (its stock_instance_list).
_STOCK = None
_SELECTOR = None


def attached(stock, selector):
    """Record that nova-api's list goes through ``selector``.

    :param stock: Nova's own ``get_instance_objects_sorted``, which the
        seam replaced.
    """
    global _STOCK, _SELECTOR
    _STOCK, _SELECTOR = stock, selector


def detached():
    """Record that nova-api lists with Nova's own function again.

    :returns: Nova's function, or None when nothing was attached.
    """
    global _STOCK, _SELECTOR
    stock, _STOCK, selector, _SELECTOR = _STOCK, None, _SELECTOR, None
    if selector is not None:
        selector.stop()
    return stock


@contextlib.contextmanager
def suspended():
    """Within, :func:`selector` is None: Nova's function lists meanwhile."""
    global _SELECTOR
    kept, _SELECTOR = _SELECTOR, None
    try:
        yield
    finally:
        _SELECTOR = kept


def selector():
    """The Selector nova-api's list goes through, or None."""
    return _SELECTOR


def stock():
    """Nova's own ``get_instance_objects_sorted``, as Nova shipped it."""
    if _STOCK is not None:
        return _STOCK
    # Imported here, as in the API seam: importing the seam, which imports
    # this module, does not import Nova's compute code.
    from nova.compute import instance_list as nova_instance_list

    return nova_instance_list.get_instance_objects_sorted


#: The parts of a reason that vary between requests of the same kind.
_VARYING = re.compile(
    r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|'
    r'\d+(\.\d+)?')


def reason_kind(reason):
    """``reason`` without its numbers and uuids, to count it by."""
    return _VARYING.sub('N', reason)[:200]


class Stats(object):
    """Counters of one nova-api process, for nova-ext-status and metrics."""

    #: ``rendered`` counts the served requests that nova_ext also rendered
    #: (``fast_render``), ``handed`` those it left to Nova's view code.
    #: With Neutron's feed read (``neutron_feed_url``), ``groups_kept``
    #: counts the detailed pages whose security groups were an answer
    #: Neutron gave before, proven unchanged, ``groups_asked`` those for
    #: which Neutron was asked. ``bodies_kept`` counts the rendered
    #: requests answered with a kept written body (``detail_bodies``,
    #: ``page_bodies``), no server rendered; ``bodies_patched`` those
    #: answered with the last body of the same request, its changed
    #: servers alone rendered again (``kept_bodies``).
    FIELDS = ('served', 'unservable', 'unavailable', 'failed', 'latched',
              'slow', 'rendered', 'handed', 'groups_kept', 'groups_asked',
              'bodies_kept', 'bodies_patched')

    #: Kinds of reasons counted apiece; those that come after share one
    #: count, so that a driver's error messages cannot grow the counters.
    MAX_REASONS = 20
    OTHER = 'other'

    def __init__(self):
        self._lock = threading.Lock()
        self.counts = dict.fromkeys(self.FIELDS, 0)
        self.last_reason = None
        # {outcome: {reason kind: count}}
        self.reasons = {}

    def add(self, field, reason=None):
        with self._lock:
            self.counts[field] += 1
            if reason is not None:
                self.last_reason = reason
                kinds = self.reasons.setdefault(field, {})
                kind = reason_kind(reason)
                if kind not in kinds and sum(
                        map(len, self.reasons.values())) >= self.MAX_REASONS:
                    kind = self.OTHER
                kinds[kind] = kinds.get(kind, 0) + 1

    def snapshot(self):
        """The counts, the last reason, and ``reasons``: counts by kind."""
        with self._lock:
            return dict(self.counts, last_reason=self.last_reason,
                        reasons={field: dict(kinds) for field, kinds
                                 in self.reasons.items()})


class Selector(object):
    """Serves list requests from the driver, or from Nova's path."""

    def __init__(self, conf, stock, clock=time.monotonic):
        """Serve from ``conf``'s driver, falling back to ``stock``.

        :param conf: the oslo.config ConfigOpts.
        :param stock: Nova's own ``get_instance_objects_sorted``.
        """
        self.conf = conf
        self.stock = stock
        self.clock = clock
        self.stats = Stats()
        self._driver = None
        self._lock = threading.Lock()
        self.latched_until = None
        self._latch_reason = None
        self._reported = float('-inf')
        self._publisher = None
        # The publishing loop (_publish_loop): whether it runs, whether the
        # counters changed since it last took them, whether a publication
        # is due or under way; guarded by _published.
        self._published = threading.Condition(self._lock)
        self._looping = self._dirty = self._busy = self._stopped = False
        self._local = threading.local()

    @property
    def report_interval(self):
        """Seconds between two publications of the counters."""
        return self.conf.nova_ext_metrics.api_counters_interval

    @property
    def driver(self):
        with self._lock:
            if self._driver is None:
                self._driver = instance_list.load_driver(self.conf)
            return self._driver

    def _latch(self, reason):
        retry = self.conf.nova_ext_instance_list.retry_interval
        reason = str(reason)
        with self._lock:
            # A fault that lasts (a schema behind, a file gone) latches the
            # driver again after each retry for the same reason: said once.
            repeated = reason == self._latch_reason
            already = self.latched_until is not None
            self.latched_until = self.clock() + retry
            self._latch_reason = reason
        if not already:
            (LOG.debug if repeated else LOG.warning)(
                'nova_ext instance list driver %s is off for %d s, Nova '
                'answers list requests meanwhile: %s', self.driver.name,
                retry, reason)

    def _latched(self):
        with self._lock:
            if self.latched_until is None:
                return False
            if self.clock() < self.latched_until:
                return True
            self.latched_until = None
        LOG.info('nova_ext instance list driver %s is tried again',
                 self._driver.name)
        return False

    def get_instance_objects_sorted(self, ctx, filters, limit, marker,
                                    expected_attrs, sort_keys, sort_dirs,
                                    cell_down_support=False):
        args = (ctx, filters, limit, marker, expected_attrs, sort_keys,
                sort_dirs)
        driver = self.driver
        if driver.name == 'cells' or getattr(self._local, 'stock', False):
            return self.stock(*args, cell_down_support=cell_down_support)
        try:
            return self._serve(driver, args, cell_down_support)
        finally:
            self._report(driver)

    def _serve(self, driver, args, cell_down_support):
        ctx, filters, limit, marker, expected_attrs, sort_keys, sort_dirs = (
            args)
        # Nova's list code may change what it is handed; the stock path
        # must still see the request as it came.
        served, result = self.attempt(
            driver, lambda: driver.get_instance_objects_sorted(
                ctx, copy.deepcopy(filters), limit, marker,
                list(expected_attrs or []),
                copy.copy(sort_keys), copy.copy(sort_dirs),
                cell_down_support=cell_down_support))
        if served:
            return result
        return self.stock(*args, cell_down_support=cell_down_support)

    def prepare(self, driver, ctx):
        """``driver.prepare(ctx)``, unless it is latched off (Nova answers)."""
        with self._lock:
            until = self.latched_until
        if until is None or self.clock() >= until:
            driver.prepare(ctx)

    def attempt(self, driver, call):
        """Run ``call()``, an answer from ``driver``, if the driver may answer.

        :returns: ``(True, what call returned)``, or ``(False, None)`` when
            Nova must answer instead: the driver is latched off, cannot
            answer this query exactly, or failed (which latches it off,
            unless the request itself was bad).
        """
        if self._latched():
            self.stats.add('latched')
            return False, None
        started = self.clock()
        try:
            result = call()
        except base.Unservable as e:
            self.stats.add('unservable', str(e))
            LOG.debug('nova_ext %s driver hands a query to Nova: %s',
                      driver.name, e)
            return False, None
        except base.Unavailable as e:
            self.stats.add('unavailable', str(e))
            self._latch(e)
            return False, None
        except Exception as e:
            # Nova answers and, for a genuinely bad request (an unknown
            # marker), gives the caller its own error.
            self.stats.add('failed', '%s: %s' % (type(e).__name__, e))
            LOG.debug('nova_ext %s driver failed, Nova answers: %s',
                      driver.name, e, exc_info=True)
            if not _is_client_error(e):
                self._latch('%s: %s' % (type(e).__name__, e))
            return False, None
        elapsed = self.clock() - started
        timeout = self.conf.nova_ext_index.query_timeout
        if elapsed > timeout:
            self._slow(driver, elapsed, timeout)
        self.stats.add('served')
        self._latch_reason = None
        return True, result

    def _slow(self, driver, elapsed, timeout):
        """A list took ``elapsed`` s: switch the driver off if it is slow.

        Not if the driver answers its probe quickly: then the request's own
        query was slow, and switching the driver off would let any caller
        turn it off for everyone.
        """
        reason = 'a list took %.2f s, more than query_timeout %.2f s' % (
            elapsed, timeout)
        probe = base.probe(driver, timeout)
        if probe is not None and not base.probe_is_slow(probe, timeout):
            self.stats.add('slow', '%s; the driver answers a probe in '
                                   '%.3f s: that request\'s own query is '
                                   'slow' % (reason, probe))
            return
        self.stats.add('slow', reason)
        self._latch(reason)

    @contextlib.contextmanager
    def stock_only(self):
        """Within, this thread's lists are Nova's, and not counted.

        For a request the driver already declined (and that was counted)
        before Nova's own handling of it began.
        """
        self._local.stock = True
        try:
            yield
        finally:
            self._local.stock = False

    def report(self):
        """Publish the counters, at most every ``api_counters_interval``."""
        self._report(self.driver)

    def _report(self, driver):
        # By a thread of its own: publishing writes to the index, which
        # another writer may hold, and no list may wait for that. The last
        # counters are published even if no request follows, once the
        # interval has passed: an idle process's counts are not left out.
        with self._published:
            self._dirty = True
            if self.clock() - self._reported >= self.report_interval:
                self._busy = True
                self._published.notify_all()
            if self._looping:
                return
            self._looping = True
            if self._publisher is None:
                self._publisher = futurist.ThreadPoolExecutor(max_workers=1)
                # futurist joins its threads at exit, in an atexit hook
                # registered before this one, which runs after it: a loop
                # still trying a publication the index refuses (its
                # database gone) would hold the process's exit forever.
                atexit.register(_stop_at_exit, weakref.ref(self))
        self._publisher.submit(self._publish_loop, driver)

    def _publish_loop(self, driver):
        """Publish the changed counters every interval, until idle."""
        while True:
            with self._published:
                wait = self.report_interval - (self.clock() -
                                               self._reported)
                if wait > 0 and self._dirty and not self._stopped:
                    # Woken early by a request whose clock says it is due.
                    self._busy = False
                    self._published.notify_all()
                    self._published.wait(wait)
                    continue
                if not self._dirty or self._stopped:
                    self._looping = self._busy = False
                    self._published.notify_all()
                    return
                self._dirty, self._busy = False, True
                self._reported = self.clock()
                counts = self.stats.snapshot()
            if not _publish(driver, counts):
                # Tried again after the interval, with what came since.
                with self._published:
                    self._dirty = True

    def stop(self):
        """Publish nothing more: the seam that lists through it is gone."""
        with self._published:
            self._stopped = True
            self._published.notify_all()

    def wait_reported(self, timeout=None):
        """Wait until the counters due to be published are."""
        with self._published:
            self._published.wait_for(lambda: not self._busy, timeout)


def _stop_at_exit(ref):
    selector = ref()
    if selector is not None:
        selector.stop()


def _publish(driver, counts):
    """Whether ``driver`` published ``counts``."""
    try:
        driver.report_stats(counts)
    except Exception:  # noqa: counters are best effort
        LOG.debug('nova_ext could not publish list counters', exc_info=True)
        return False
    return True


def _is_client_error(error):
    code = getattr(error, 'code', None)
    return isinstance(code, int) and 400 <= code < 500
