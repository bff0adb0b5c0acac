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
"""The compute-disabled and compute-down request filters."""

import fixtures
from nova import objects
from nova.scheduler import request_filter

from nova_ext.compute_status import request_filters
from nova_ext.compute_status import trait_callbacks
from nova_ext.seams import scheduler as scheduler_ep
from nova_ext.tests.unit import base

DISABLED = trait_callbacks.COMPUTE_STATUS_DISABLED
DOWN = trait_callbacks.COMPUTE_STATUS_DOWN


def _spec():
    objects.register_all()
    return objects.RequestSpec(
        instance_uuid='2a1b6b8e-0c1e-4f5c-9d51-6b2f0f7a1c11',
        request_level_params=objects.RequestLevelParams())


class _Response(object):
    def __init__(self, status_code):
        self.status_code = status_code
        self.text = ''


class _Client(object):
    def __init__(self, status_code=201):
        self.status_code = status_code
        self.puts = []

    def put(self, url, data, version=None, global_request_id=None):
        self.puts.append(url)
        return _Response(self.status_code)


class _Ctxt(object):
    global_id = 'req-1'


class TestRequestFilters(base.TestCase):

    def setUp(self):
        super().setUp()
        original = list(request_filter.ALL_REQUEST_FILTERS)
        self.addCleanup(request_filter.ALL_REQUEST_FILTERS.__setitem__,
                        slice(None), original)
        self.client = _Client()
        self.useFixture(fixtures.MockPatch(
            'nova.scheduler.client.report.report_client_singleton',
            return_value=self.client))

    def test_attached_by_name_and_traced(self):
        self.flags(request_filters=['compute-disabled', 'compute-down'],
                   group='nova_ext_scheduler')
        scheduler_ep.attach()
        self.assertEqual(['compute-disabled', 'compute-down'],
                         scheduler_ep.attached())
        ours = request_filter.ALL_REQUEST_FILTERS[-2:]
        # trace_request_filter keeps the wrapped function's name.
        self.assertEqual(
            ['nova_ext:compute-disabled', 'nova_ext:compute-down'],
            [f.__name__ for f in ours])

    def test_disabled_filter_alone_forbids(self):
        spec = _spec()
        self.assertTrue(request_filters.ComputeDisabledFilter()(_Ctxt(), spec))
        self.assertEqual({DISABLED}, spec.root_forbidden)

    def test_disabled_filter_stands_by_after_nova(self):
        log = self.useFixture(fixtures.FakeLogger(level='INFO'))
        ours = request_filters.ComputeDisabledFilter()
        for _ in range(3):
            spec = _spec()
            # Nova's own filter runs first in the pipeline.
            self.assertTrue(request_filter.compute_status_filter(None, spec))
            self.assertFalse(ours(_Ctxt(), spec))
            self.assertEqual({DISABLED}, spec.root_forbidden)
        self.assertEqual(1, log.output.count('compute-disabled stands by'))

    def test_down_filter_creates_trait_once(self):
        ours = request_filters.ComputeDownFilter()
        for _ in range(3):
            spec = _spec()
            self.assertTrue(ours(_Ctxt(), spec))
            self.assertEqual({DOWN}, spec.root_forbidden)
        self.assertEqual(['/traits/%s' % DOWN], self.client.puts)

    def test_down_filter_steps_aside_when_placement_fails(self):
        self.client.status_code = 503
        ours = request_filters.ComputeDownFilter()
        spec = _spec()
        self.assertFalse(ours(_Ctxt(), spec))
        self.assertEqual(set(), spec.root_forbidden)
        self.client.status_code = 204
        self.assertTrue(ours(_Ctxt(), spec))
        self.assertEqual({DOWN}, spec.root_forbidden)

    def test_filters_never_save(self):
        spec = _spec()
        self.useFixture(fixtures.MockPatchObject(
            objects.RequestSpec, 'save', side_effect=AssertionError('saved')))
        request_filters.ComputeDisabledFilter()(_Ctxt(), spec)
        request_filters.ComputeDownFilter()(_Ctxt(), spec)
        self.assertEqual({DISABLED, DOWN}, spec.root_forbidden)
