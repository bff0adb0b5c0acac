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
"""Request filters shipped with nova_ext.

In the ``nova_ext.scheduler.request_filters`` namespace:

``compute-disabled``
    Forbids ``COMPUTE_STATUS_DISABLED`` on root providers: the request
    filter of the pre-filter-disabled-computes spec, for a Nova whose own
    ``compute_status_filter`` is absent (removed, or patched out). When
    Nova's filter already forbade the trait this one stands by.

``compute-down``
    Forbids :data:`.trait_callbacks.COMPUTE_STATUS_DOWN`, which the
    ``compute-status`` trait callback sets on the root providers of
    computes that are down or forced down, so that placement does not spend
    ``[scheduler]max_placement_results`` on hosts the ComputeFilter would
    reject.

Both follow Nova's contract: they change the RequestSpec in memory only
(``RequestSpec.save`` drops ``request_level_params``) and return whether
they acted. nova_ext's scheduler seam wraps them in Nova's
``trace_request_filter``.
"""

import threading

from oslo_log import log as logging

from nova_ext.compute_status import trait_callbacks
from nova_ext.scheduler import base

LOG = logging.getLogger(__name__)


class ComputeDisabledFilter(base.RequestFilter):
    """Keeps disabled computes out of allocation candidates."""

    trait = trait_callbacks.COMPUTE_STATUS_DISABLED

    def __init__(self):
        self._told = threading.Event()

    def __call__(self, ctxt, request_spec):
        # nova_ext's filters run after Nova's, so Nova's compute_status_filter
        # (always on in Nova 34) has already spoken when it is there. Adding
        # the trait again would be harmless, but claiming to have acted
        # would make Nova log a filter that did nothing.
        if self.trait in request_spec.root_forbidden:
            if not self._told.is_set():
                self._told.set()
                LOG.info('nova_ext request filter compute-disabled: Nova '
                         'already forbids %s (its compute_status_filter is '
                         'in the pipeline); compute-disabled stands by.',
                         self.trait)
            return False
        request_spec.root_forbidden.add(self.trait)
        LOG.debug('compute-disabled request filter added forbidden trait %s',
                  self.trait)
        return True


class ComputeDownFilter(base.RequestFilter):
    """Keeps down and forced-down computes out of allocation candidates."""

    trait = trait_callbacks.COMPUTE_STATUS_DOWN

    def __init__(self):
        self._trait_known = False
        self._lock = threading.Lock()

    def _ensure_trait(self, ctxt):
        # Placement answers 400 to a query that forbids a trait it does not
        # know, which would fail every build before any compute was ever
        # marked down. Creating a custom trait is idempotent.
        if self._trait_known:
            return True
        with self._lock:
            if self._trait_known:
                return True
            # Imported here: the report client pulls in keystoneauth and
            # Nova's placement configuration, which only nova-scheduler has.
            from nova.scheduler.client import report
            try:
                resp = report.report_client_singleton().put(
                    '/traits/%s' % self.trait, None, version='1.6',
                    global_request_id=ctxt.global_id)
            except Exception as e:
                # keystoneauth's connection errors, for example.
                LOG.debug('Creating trait %s failed: %s', self.trait, e)
                resp = None
            if resp is None or resp.status_code not in (201, 204):
                # Schedule as stock Nova would for this request (the
                # ComputeFilter still rejects down hosts); the next one
                # tries again.
                LOG.warning('nova_ext request filter compute-down: placement '
                            'did not create trait %s (%s); not filtering '
                            'this request.', self.trait,
                            getattr(resp, 'status_code', 'no answer'))
                return False
            self._trait_known = True
            return True

    def __call__(self, ctxt, request_spec):
        if not self._ensure_trait(ctxt):
            return False
        request_spec.root_forbidden.add(self.trait)
        LOG.debug('compute-down request filter added forbidden trait %s',
                  self.trait)
        return True
