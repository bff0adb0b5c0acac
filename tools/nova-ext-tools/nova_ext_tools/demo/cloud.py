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
"""An in-process multi-cell Nova 34 with nova_ext attached, outside a test
runner.

It is the functional-test harness (nova_ext.tests.functional.base) run
once as a program: a body function is executed as the only test of a
generated test case, so Nova's fixtures build the cloud before it and tear
everything down after it, whatever happens. Import this module only after
choosing the concurrency mode (see nova_ext_tools.cmd.demo).
"""

import sys
import time

from nova.tests import fixtures as nova_fixtures
import testtools

from nova_ext.tests.functional import base
from nova_ext.tests.functional import fixtures as ext_fixtures


class Progress(object):
    """Numbered steps with timings on a stream, for a long setup."""

    def __init__(self, stream=None, total=None):
        self.stream = stream or sys.stdout
        self.total = total
        self.n = 0
        self._started = None

    def step(self, text):
        self.done()
        self.n += 1
        total = '/%d' % self.total if self.total else ''
        self.stream.write('[%d%s] %s ... ' % (self.n, total, text))
        self.stream.flush()
        self._started = time.monotonic()

    def done(self, note=''):
        if self._started is None:
            return
        self.stream.write('%s(%.1f s)\n' % (note and note + ' ',
                                            time.monotonic() - self._started))
        self.stream.flush()
        self._started = None


class _Cloud(base.NovaExtTestCase):
    """Set up by run(); the attributes below are filled per run."""

    body = None
    progress = None

    def setUp(self):
        #: Computes a scene stopped (stop_compute).
        self.stopped_computes = set()
        super().setUp()

    def _setup_services(self):
        self.progress.step('starting nova-conductor and nova-scheduler (%s)'
                           % ('nova_ext attached' if self.NOVA_EXT_SEAMS
                              else 'stock, no nova_ext'))
        super()._setup_services()
        self.progress.done()

    def _setup_compute_service(self):
        computes = self.NUMBER_OF_CELLS * self.COMPUTES_PER_CELL
        self.progress.done()
        self.progress.step('starting %d nova-compute services (fake virt '
                           'driver) in %d cells' % (computes,
                                                    self.NUMBER_OF_CELLS))
        first = super()._setup_compute_service()
        self.progress.done()
        self.progress.step('starting nova-api')
        return first

    def stop_compute(self, host):
        """Stop a nova-compute, as a scene does to show it going down.

        Later scenes ask :meth:`compute_running` before they send servers
        to a host.
        """
        self.computes[host].stop()
        self.stopped_computes.add(host)

    def compute_running(self, host):
        return host in self.computes and host not in self.stopped_computes

    def start_compute(self, cell_name, driver):
        """One more nova-compute in a cell, with another virt driver.

        Named as the others are (compute<cell>-<n>); computes started
        afterwards get the usual driver.
        """
        prefix = 'compute%s-' % cell_name[len('cell'):]
        host = '%s%d' % (prefix, 1 + sum(h.startswith(prefix)
                                         for h in self.computes))
        with nova_fixtures.ConfPatcher(compute_driver=driver):
            self._start_compute(host, cell_name=cell_name)
        return host

    def restart_api(self):
        """Restart nova-api, as an operator does after changing nova.conf.

        The nova_ext filter loads the API handlers enabled now; the API
        clients keep working (same endpoint).
        """
        self.api_fixture.cleanUp()
        self.api_fixture.setUp()

    def runTest(self):
        self.progress.done()
        type(self).body(self)


def run(body, cells=2, computes_per_cell=1, options=None,
        seams=ext_fixtures.ALL_SEAMS, progress=None):
    """Boot the cloud, call ``body(cloud)``, tear the cloud down.

    :returns: a list of ``(test id, formatted error)``; empty on success.
    """
    progress = progress or Progress()
    cls = type('NovaExtDemoCloud', (_Cloud,), {
        'NUMBER_OF_CELLS': cells,
        'COMPUTES_PER_CELL': computes_per_cell,
        'NOVA_EXT_OPTIONS': options or {},
        'NOVA_EXT_SEAMS': tuple(seams),
        'body': staticmethod(body),
        'progress': progress,
    })
    progress.step('creating the API, cell0 and %d cell databases (SQLite) '
                  'and placement' % cells)
    result = testtools.TestResult()
    cls('runTest').run(result)
    progress.done()
    return result.errors + result.failures
