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
"""Writers whose clocks disagree: every list shows the last change.

Nova stamps ``updated_at`` with the clock of whichever process writes:
nova-api for a rename, a lock or metadata, the conductors for what the
computes report. Here each change is made with Nova's clock set off by a
few seconds (``fixtures.SkewedClock``), as by a host whose clock is behind
or ahead of the others', and every list right after it, in each list
mode, is compared with Nova's answer and must come from the index.
"""

from nova_ext.tests.functional import fixtures as ext_fixtures
from nova_ext.tests.functional import test_index_capture as capture_tests
from nova_ext.tests.functional import test_index_parity as parity


class _Clocks(object):
    """Mixed into a capture test case of one list mode."""

    EVERY_LIST_SERVED = True

    def behind(self, server, seconds, change, queries=('',)):
        """``change()`` by a clock ``seconds`` behind the last writer's.

        The last write is made and listed (the index holds it) right
        before, so that the change's ``updated_at`` is older than the one
        the index holds.
        """
        self.api.post_server_metadata(server['id'],
                                      {'before': str(seconds)})
        self.assertSameAnswer(self.admin_api, 'servers/detail?all_tenants=1')
        with ext_fixtures.SkewedClock(-seconds):
            change()
        self.assertListsNow(queries)

    def test_changes_by_clocks_behind_show_at_once(self):
        server = self._create_server(host='compute1-1', networks='none')
        sid = server['id']
        self.behind(server, 1, lambda: self.api.put_server(
            sid, {'server': {'name': 'behind'}}), ('', 'name=behind'))
        self.behind(server, 5, lambda: self.api.post_server_action(
            sid, {'lock': {'locked_reason': 'clock'}}))
        self.api.post_server_action(sid, {'unlock': None})
        self.behind(server, 3, lambda: self.api.post_server_metadata(
            sid, {'k': 'v'}))
        # Written by the conductor, for the compute.
        self.behind(server, 10, lambda: self._stop_server(server),
                    ('', 'status=SHUTOFF'))
        self.behind(server, 10, lambda: self._delete_server(server),
                    ('', 'all_tenants=1&deleted=true'))

    def test_a_change_after_a_clock_ahead_shows(self):
        server = self._create_server(host='compute2-1', networks='none')
        with ext_fixtures.SkewedClock(10):
            self.api.put_server(server['id'], {'server': {'name': 'ahead'}})
        self.assertListsNow(('', 'name=ahead'))
        self.api.put_server(server['id'], {'server': {'name': 'right'}})
        self.assertListsNow(('', 'name=right'))


class TestClocksRenderCache(_Clocks, capture_tests._CaptureBase):
    """Through fast_render and the render cache."""


class TestClocksFastRender(_Clocks, capture_tests._CaptureBase):
    """Through fast_render, without the render cache."""

    NOVA_EXT_OPTIONS = dict(parity.FAST_OPTIONS,
                            nova_ext_index=capture_tests.CAPTURE)


class TestClocksIndex(_Clocks, capture_tests._CaptureBase):
    """Through the index driver alone, Nova rendering."""

    NOVA_EXT_OPTIONS = dict(parity.IndexTestCase.NOVA_EXT_OPTIONS,
                            nova_ext_index=capture_tests.CAPTURE)
    FAST_RENDER = False
