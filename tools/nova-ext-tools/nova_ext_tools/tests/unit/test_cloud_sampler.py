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

"""The request sampler's collapsed stacks."""

import json
import os
import subprocess
import sys
import types

import fixtures

from nova_ext.tests.unit import base

from nova_ext_tools.cloud import sampler


class TestFrames(base.TestCase):

    def test_outermost_first_with_lines(self):
        frame = sys._getframe()
        # The frame's line as it is sampled: this one's.
        stack, line = sampler._frames(frame).split(';'), frame.f_lineno
        self.assertEqual('TestFrames.test_outermost_first_with_lines '
                         '(test_cloud_sampler.py:%d)' % line, stack[-1])
        self.assertGreater(len(stack), 1)

    def test_a_frame_without_a_line(self):
        # What sys._current_frames() can give of a frame between two
        # lines: its line is None.
        code = sys._getframe().f_code
        frame = types.SimpleNamespace(f_code=code, f_lineno=None,
                                      f_back=sys._getframe())
        stack = sampler._frames(frame).split(';')
        self.assertEqual('TestFrames.test_a_frame_without_a_line '
                         '(test_cloud_sampler.py:0)',
                         stack[-1])


#: Two requests through the sampler, one sampled, in a process of their
#: own: the test runner's has eventlet's patches, under which the thread
#: serving a request is a green one that sys._current_frames() lacks.
_REQUESTS = """
import sys, time
import webob, webob.dec
from nova_ext_tools.cloud import sampler

@webob.dec.wsgify
def app(request):
    time.sleep(0.05)
    return 'ok'
filtered = sampler.filter_factory({}, sys.argv[1], '0.002')(app)
for header in ({sampler.REQUEST_HEADER: '1'}, {}):
    request = webob.Request.blank('/', headers=header)
    assert request.get_response(filtered).body == b'ok'
print(__import__('os').getpid())
"""


class TestSampler(base.TestCase):

    def test_each_sampled_request_on_its_own(self):
        output = self.useFixture(fixtures.TempDir()).path
        pid = int(subprocess.check_output(
            [sys.executable, '-c', _REQUESTS, output], text=True))
        with open(os.path.join(output, 'stacks-%d.txt' % pid)) as f:
            collapsed = f.read().splitlines()
        with open(os.path.join(output, 'requests-%d.jsonl' % pid)) as f:
            (line,) = f.read().splitlines()
        sampled = json.loads(line)
        self.assertGreaterEqual(sampled['ms'], 50)
        self.assertTrue(sampled['stacks'])
        # Every stack is of the request's own thread, from the filter
        # down; most are in the application, which sleeps. A few may
        # catch the thread around it, on a busy machine.
        self.assertTrue(all('Sampler.__call__ (sampler.py:' in s
                            for s in sampled['stacks']), sampled['stacks'])
        counts = sampled['stacks'].values()
        self.assertGreater(sum(n for s, n in sampled['stacks'].items()
                               if 'app (<string>:' in s),
                           sum(counts) / 2, sampled['stacks'])
        self.assertEqual(
            sorted('%s %d' % i for i in sampled['stacks'].items()),
            sorted(collapsed))
