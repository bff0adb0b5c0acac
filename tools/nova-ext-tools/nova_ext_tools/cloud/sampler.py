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
"""A stack sampler of requests: a paste filter, first in the pipeline.

py-spy cannot read the stack of a uwsgi worker's main thread (it samples
it empty), which is where uwsgi runs the application. So this filter, in
``nova-api-profiled`` (``nova_ext_tools.cloud.nova``), samples the stack
of the thread serving a request carrying ``X-Sample-Stacks: 1`` every
``interval`` seconds from a thread of its own, and appends the stacks it
saw to ``<output>/stacks-<pid>.txt``, collapsed (outermost frame first,
with a count: py-spy's raw format), and the request's wall time with its
own stacks, a JSON line, to ``<output>/requests-<pid>.jsonl``. The sampler
takes the interpreter lock to look: what it reports is shares, not
latency.
"""

import json
import os
import sys
import threading
import time

import webob.dec

REQUEST_HEADER = 'X-Sample-Stacks'


def _frames(frame):
    stack = []
    while frame is not None:
        code = frame.f_code
        path = code.co_filename
        # As py-spy shortens them: from the package down.
        marker = path.rfind('site-packages/')
        if marker >= 0:
            path = path[marker + len('site-packages/'):]
        else:
            top = path.find('/nova_ext/')
            path = path[top + 1:] if top >= 0 else os.path.basename(path)
        # A frame between two lines (a generator's first step) has none:
        # 0, as py-spy writes it.
        stack.append('%s (%s:%d)' % (code.co_qualname, path,
                                     frame.f_lineno or 0))
        frame = frame.f_back
    return ';'.join(reversed(stack))


class Sampler(object):

    def __init__(self, application, interval, output):
        self.application = application
        self.interval = interval
        self.output = output

    @webob.dec.wsgify
    def __call__(self, request):
        if not request.headers.get(REQUEST_HEADER):
            return self.application
        target = threading.get_ident()
        stacks, done = {}, threading.Event()

        def sample():
            while not done.wait(self.interval):
                frame = sys._current_frames().get(target)
                if frame is not None:
                    key = _frames(frame)
                    stacks[key] = stacks.get(key, 0) + 1
        sampler = threading.Thread(target=sample, daemon=True)
        began = time.monotonic()
        sampler.start()
        try:
            return request.get_response(self.application)
        finally:
            done.set()
            sampler.join()
            path = os.path.join(self.output, 'stacks-%d.txt' % os.getpid())
            with open(path, 'a') as f:
                f.writelines('%s %d\n' % item for item in stacks.items())
            # And each request on its own, to tell the slowest apart.
            path = os.path.join(self.output,
                                'requests-%d.jsonl' % os.getpid())
            with open(path, 'a') as f:
                f.write(json.dumps({
                    'ms': (time.monotonic() - began) * 1000,
                    'stacks': stacks}) + '\n')


def filter_factory(global_conf, output, interval='0.005', **local_conf):
    def _filter(application):
        return Sampler(application, float(interval), output)
    return _filter
