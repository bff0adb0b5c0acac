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
"""Applies trait callbacks to placement through Nova's report client.

Every write is a compare-and-set on the provider generation
(``set_traits_for_provider`` with the generation just read), retried on a
conflict with a fresh read, so concurrent writers (another watcher, the
compute's resource tracker, an operator) never lose each other's changes.
Only traits some enabled callback owns are ever removed.
"""

import collections
import functools

from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects
from oslo_log import log as logging

from nova_ext import exception
from nova_ext.seams.internals import report_client
from nova_ext import virt
from nova_ext.virt import base

LOG = logging.getLogger(__name__)

COMPUTE_BINARY = 'nova-compute'
#: Attempts of one provider's read-modify-write before giving up.
CONFLICT_RETRIES = 4
#: Writes of one service's status at most: each after a change of its row
#: saved while the one before was written.
WRITES = 3
#: Placement's ``ResourceProviderConcurrentUpdateDetected``, which it
#: answers with a 500, not a 409: a concurrent write that commits after
#: the handler's generation check but before its own (seen with placement
#: 16 when Nova's compute, syncing COMPUTE_STATUS_DISABLED on an enable,
#: and the consumer wrote the same provider at once). Like a 409, it means
#: "read again".
PLACEMENT_RACE = 'concurrently updated the resource provider'


#: How a virt driver marks the disable it does itself when it loses its
#: hypervisor: Nova's libvirt driver (``DISABLE_PREFIX`` in
#: ``nova.virt.libvirt.driver``, the only driver that reports its
#: hypervisor) disables its service with this reason prefix when the
#: connection to libvirt is lost, and enables it again once reconnected.
HYPERVISOR_LOST_PREFIX = 'AUTO: '


def hypervisor_up(service):
    """False if the service's virt driver reported its hypervisor lost.

    None otherwise: no driver says that its hypervisor is reachable.
    """
    reason = service.disabled_reason or ''
    if service.disabled and reason.startswith(HYPERVISOR_LOST_PREFIX):
        return False
    return None


def read_service(cctxt, host):
    """The compute service of ``host`` as its row is now, or None.

    :param cctxt: a context targeted at the host's cell.
    """
    try:
        return objects.Service.get_by_compute_host(cctxt, host)
    except nova_exception.ComputeHostNotFound:
        return None


def _until_settled(change, write, read_again):
    """``write(change)``, then again while the service's row moves on.

    A change of the row saved while a write was made, which another
    process may have written already, would be undone by the older write:
    the row is read again after each write (``read_again()``, the change
    it asks for, None if the service is gone), and a change it shows is
    written too, ``WRITES`` times at most.

    :returns: how many providers were written, and the last change.
    """
    written = 0
    for _attempt in range(WRITES):
        if change is None:
            break
        written += write(change)
        now = read_again()
        if now == change:
            break
        change = now
    return written, change


def status_of(service, up):
    """The ``ServiceStatus`` of a ``nova.objects.Service``."""
    return base.ServiceStatus(host=service.host,
                              disabled=bool(service.disabled),
                              forced_down=bool(service.forced_down),
                              up=up, hypervisor_up=hypervisor_up(service))


class TraitEngine(object):
    """Owns the traits of the enabled callbacks on root compute providers.

    :param callbacks: ``[(name, TraitCallback)]``.
    :param reportclient: a ``SchedulerReportClient``; a private one by
        default. Its provider-tree cache is the engine's own, never the
        one of a compute's resource tracker.
    """

    def __init__(self, callbacks, reportclient=None):
        self.callbacks = list(callbacks)
        self.owned = frozenset().union(
            *(cb.owned_traits for _, cb in self.callbacks))
        self._client = reportclient
        self.counts = collections.Counter()

    @classmethod
    def from_conf(cls, conf, reportclient=None):
        """The engine of ``[nova_ext_compute_status]trait_callbacks``.

        :raises NovaExtError: naming an unknown or broken callback.
        """
        return cls(virt.load_trait_callbacks(conf), reportclient)

    @property
    def client(self):
        if self._client is None:
            from nova.scheduler.client import report
            self._client = report.SchedulerReportClient()
        return self._client

    def change_for(self, old, new):
        """The merged ``TraitChange`` of every callback for one service."""
        add, remove = set(), set()
        for name, callback in self.callbacks:
            change = callback.traits_for(old, new)
            stray = (set(change.add) | set(change.remove)) - set(
                callback.owned_traits)
            if stray:
                raise exception.NovaExtError(
                    'nova_ext: trait callback %r returned traits it does not '
                    'own: %s' % (name, ', '.join(sorted(stray))))
            add |= change.add
            remove |= change.remove
        # One callback wanting a trait another drops: keeping it is the
        # side that keeps a host out of scheduling.
        return base.TraitChange(add=frozenset(add),
                                remove=frozenset(remove - add))

    def _prime_cache(self, rp_uuid, info):
        # set_traits_for_provider compares with, and updates, the report
        # client's provider-tree cache, which in this process holds nothing
        # but what the engine puts there. Record what placement just said so
        # the call neither skips a needed write nor fails on an unknown
        # provider.
        report_client.cache_provider_traits(self.client, rp_uuid,
                                            info.traits, info.generation)

    def apply(self, ctxt, rp_uuid, change):
        """Apply ``change`` to one provider; return whether it was written.

        :raises ResourceProviderUpdateConflict: after CONFLICT_RETRIES
            generation conflicts in a row.
        :raises ResourceProviderUpdateFailed: on any other placement error,
            or after CONFLICT_RETRIES of placement's 500 for a race.
        :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested
            with, before any write.
        """
        for attempt in range(1, CONFLICT_RETRIES + 1):
            info = self.client.get_provider_traits(ctxt, rp_uuid)
            wanted = (info.traits - change.remove) | change.add
            if wanted == info.traits:
                return False
            self._prime_cache(rp_uuid, info)
            try:
                self.client.set_traits_for_provider(
                    ctxt, rp_uuid, wanted, generation=info.generation)
            except (nova_exception.ResourceProviderUpdateConflict,
                    nova_exception.ResourceProviderUpdateFailed) as e:
                if (isinstance(e, nova_exception.ResourceProviderUpdateFailed)
                        and PLACEMENT_RACE not in str(e)):
                    raise
                self.counts['conflicts'] += 1
                if attempt == CONFLICT_RETRIES:
                    raise
                continue
            self.counts['written'] += 1
            LOG.info('nova_ext compute status: provider %s traits +%s -%s',
                     rp_uuid, sorted(wanted - info.traits),
                     sorted(info.traits - wanted))
            return True

    def providers_with(self, ctxt, trait):
        """UUIDs of every provider that has ``trait`` in placement."""
        resp = self.client.get('/resource_providers?required=%s' % trait,
                               version='1.18',
                               global_request_id=ctxt.global_id)
        if resp.status_code == 400 and 'No such trait' in resp.text:
            return set()
        if resp.status_code != 200:
            raise exception.NovaExtError(
                'nova_ext: listing providers with trait %s failed: %s %s'
                % (trait, resp.status_code, resp.text))
        return {rp['uuid'] for rp in resp.json()['resource_providers']}

    def root_providers(self, cctxt, host):
        """Root compute-node provider UUIDs of a service's host.

        A compute node's provider UUID is the node's UUID, and it is always
        a root: nested providers (vGPUs, PCI devices) have UUIDs of their
        own, so they are never touched.
        """
        try:
            nodes = objects.ComputeNodeList.get_all_by_host(cctxt, host)
        except nova_exception.ComputeHostNotFound:
            return []
        return sorted(node.uuid for node in nodes)

    def sync_service(self, cctxt, service, up, leave=frozenset()):
        """Make a service's root providers carry what the callbacks say.

        Another process (another nova-api worker's consumer, a watcher's
        sweep, Nova's compute) may write the same providers for a change
        saved after ``service`` was read and before this write: they are
        written until the row settles (:func:`_until_settled`).

        :param cctxt: a context targeted at the service's cell.
        :param up: heartbeat status (True, False or None for unknown).
        :param leave: traits these writes leave as they are.
        :returns: how many providers were written.
        """
        host = service.host

        def change_of(service):
            change = self.change_for(None, status_of(service, up))
            return base.TraitChange(add=change.add - leave,
                                    remove=change.remove - leave)

        def write(change):
            written = 0
            for rp_uuid in self.root_providers(cctxt, host):
                try:
                    written += self.apply(cctxt, rp_uuid, change)
                except nova_exception.ResourceProviderTraitRetrievalFailed:
                    # Not in placement yet: its compute creates it, and its
                    # resource tracker already reports the disabled trait.
                    LOG.debug('Provider %s of host %s is not in placement',
                              rp_uuid, host)
            return written

        def read_again():
            now = read_service(cctxt, host)
            return None if now is None else change_of(now)

        written, _ = _until_settled(change_of(service), write, read_again)
        return written

    def _fresh_change(self, ctxt, cell, host, up):
        """The change for a service as its row is now, or None if gone.

        A sweep reads every service first and writes last: an os-services
        change in between, which the ``service.update`` consumer may
        already have applied, would be undone by the sweep's older read.
        So a provider is written from its service read again just before.
        """
        with nova_context.target_cell(ctxt, cell) as cctxt:
            service = read_service(cctxt, host)
        if service is None:
            return None
        return self.change_for(None, status_of(service, up))

    def _apply_fresh(self, ctxt, rp_uuid, change, owner):
        """Apply ``change``, then again while the service's row moves on.

        An os-services change saved between the row's read and this
        write, which the ``service.update`` consumer may have written
        already, would be undone by it (:func:`_until_settled`).

        :param owner: ``(cell, host, heartbeat answer)`` of the provider.
        :returns: how many writes were made, and the last change.
        """
        cell, host, up = owner
        return _until_settled(
            change, functools.partial(self.apply, ctxt, rp_uuid),
            functools.partial(self._fresh_change, ctxt, cell, host, up))

    def reconcile(self, heartbeat, ctxt=None):
        """Make placement match every cell's services table.

        :param heartbeat: callable ``(service) -> True/False/None``.
        :returns: a Counter: services, providers, written, orphans.
        """
        ctxt = ctxt or nova_context.get_admin_context()
        stats = collections.Counter()
        desired = {}
        #: rp uuid -> (cell, host, heartbeat answer) of its service
        owners = {}
        for cell in objects.CellMappingList.get_all(ctxt):
            if cell.is_cell0():
                continue
            with nova_context.target_cell(ctxt, cell) as cctxt:
                services = objects.ServiceList.get_by_binary(
                    cctxt, COMPUTE_BINARY, include_disabled=True)
                nodes = collections.defaultdict(list)
                for node in objects.ComputeNodeList.get_all(cctxt):
                    nodes[node.host].append(node.uuid)
            for service in services:
                stats['services'] += 1
                # Once per sweep: each call is a look at the counter.
                up = heartbeat(service)
                change = self.change_for(None, status_of(service, up))
                for rp_uuid in nodes.get(service.host, ()):
                    desired[rp_uuid] = change
                    owners[rp_uuid] = (cell, service.host, up)
        # One query per owned trait tells which providers carry it; only
        # the providers whose traits must change are read and written.
        has = {t: self.providers_with(ctxt, t) for t in self.owned}
        #: host -> its change from the service read again (one read for
        #: every node of an ironic-style host)
        fresh = {}
        for rp_uuid, change in desired.items():
            stats['providers'] += 1
            if (any(rp_uuid not in has[t] for t in change.add) or
                    any(rp_uuid in has[t] for t in change.remove)):
                cell, host, up = owners[rp_uuid]
                if host not in fresh:
                    fresh[host] = self._fresh_change(ctxt, cell, host, up)
                try:
                    written, fresh[host] = self._apply_fresh(
                        ctxt, rp_uuid, fresh[host], (cell, host, up))
                    stats['written'] += written
                except nova_exception.ResourceProviderTraitRetrievalFailed:
                    stats['missing'] += 1
        # Providers with an owned custom trait but no compute service behind
        # them any more (a deleted service, a node moved to another host).
        # Standard traits such as COMPUTE_STATUS_DISABLED are Nova's too, and
        # others may set them on providers nova_ext knows nothing about.
        custom = frozenset(t for t in self.owned if t.startswith('CUSTOM_'))
        orphans = set().union(*(has[t] for t in custom)) - set(desired)
        for rp_uuid in sorted(orphans):
            stats['orphans'] += 1
            try:
                stats['written'] += self.apply(
                    ctxt, rp_uuid, base.TraitChange(remove=custom))
            except nova_exception.ResourceProviderTraitRetrievalFailed:
                pass
        return stats
