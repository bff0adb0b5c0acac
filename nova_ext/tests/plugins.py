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
"""Plugins of every kind, installed for tests by EntryPointsFixture."""

import threading

from nova_ext.api import base as api_base
from nova_ext.notifications import base as notifications_base
from nova_ext.object_migrations import base as migrations_base
from nova_ext.scheduler import base as scheduler_base
from nova_ext.virt import base as virt_base

TEST_TRAIT = 'CUSTOM_NOVA_EXT_TEST'


class RecordingHandler(api_base.Handler):
    """Delegates to Nova and marks the response with the route it saw."""

    routes = api_base.ROUTES
    calls = []

    def __call__(self, request, application):
        _, urlvars = api_base.route_of(request)
        response = request.get_response(application)
        seen = '%s %s' % (request.method, urlvars.get('server_id'))
        RecordingHandler.calls.append(seen)
        response.headers['X-Nova-Ext-Test'] = seen
        return response


class FailingHandler(api_base.Handler):
    routes = (api_base.SERVERS_DETAIL,)

    def __call__(self, request, application):
        raise RuntimeError('handler failure injected by the test')


class RecordingConsumer(notifications_base.Consumer):
    event_types = ('instance.*',)
    received = []
    seen = threading.Event()

    def consume(self, notification):
        RecordingConsumer.received.append(notification)
        RecordingConsumer.seen.set()


class FailingConsumer(notifications_base.Consumer):
    event_types = ('*',)

    def consume(self, notification):
        raise RuntimeError('consumer failure injected by the test')


class ForbidTestTrait(scheduler_base.RequestFilter):
    """Keeps providers with TEST_TRAIT out of allocation candidates."""

    calls = []

    def __call__(self, ctxt, request_spec):
        ForbidTestTrait.calls.append(request_spec.instance_uuid)
        request_spec.root_forbidden.add(TEST_TRAIT)
        return True


class NotAPlugin(object):
    pass


class DisabledTraitCallback(virt_base.TraitCallback):
    owned_traits = frozenset(['COMPUTE_STATUS_DISABLED'])

    def traits_for(self, old, new):
        if new.disabled:
            return virt_base.TraitChange(add=self.owned_traits)
        return virt_base.TraitChange(remove=self.owned_traits)


class CountingMigration(migrations_base.ObjectMigration):
    def __call__(self, context, max_count):
        return 0, 0


def reset():
    RecordingHandler.calls.clear()
    RecordingConsumer.received.clear()
    RecordingConsumer.seen.clear()
    ForbidTestTrait.calls.clear()
