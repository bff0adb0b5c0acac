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
"""The request filter contract (``nova_ext.scheduler.request_filters``).

Nova runs its request filters (``nova/scheduler/request_filter.py``) on
every RequestSpec before it asks placement for allocation candidates. A
request filter narrows that query, for example by adding a forbidden trait,
so that placement never offers a host the scheduler would reject anyway.
nova_ext's filters are appended to Nova's list and follow Nova's contract.
"""

import abc


class RequestFilter(abc.ABC):
    """A pre-placement filter with Nova's ``(ctxt, request_spec) -> bool``.

    Subclasses are instantiated once, when nova-scheduler starts, with no
    arguments; they read options from ``nova_ext.conf.CONF``.
    """

    @abc.abstractmethod
    def __call__(self, ctxt, request_spec):
        """Inspect and modify ``request_spec`` in memory.

        Follow Nova's rules for request filters: change the RequestSpec only
        in memory (for example ``request_spec.root_forbidden``) and never
        save it, since what a filter adds applies to this scheduling attempt
        only; raise ``nova.exception.RequestFilterFailed`` to fail the
        request with NoValidHost.

        :param ctxt: ``nova.context.RequestContext``
        :param request_spec: ``nova.objects.RequestSpec``
        :returns: True if the filter acted on the request, False if it had
            nothing to do (Nova logs the time taken only when True).
        """
