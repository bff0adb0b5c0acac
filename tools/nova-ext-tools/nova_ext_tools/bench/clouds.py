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
"""Several benchmark clouds alive at once, each in a process of its own.

The machine's speed drifts over hours (the same request, on the same code
and data, took half as long again one afternoon as that morning), so two
clouds timed one after the other differ by the drift as well as by their
number of cells. The harness keeps its cloud in process-wide state (the
configuration, Nova's ``target_cell``), so one process holds one cloud:
here each cloud gets a process forked from the benchmark's, which builds
it and then does what the benchmark asks, one command at a time. The
benchmark asks every cloud for the same work in turn (:func:`turns`), so
that the clouds share the minutes they are timed in.

A command's result comes back through a pipe (pickled). A cloud process
leaves with ``os._exit`` after its cloud is torn down, so it never runs
the benchmark's own exit hooks.
"""

import multiprocessing
import os
import resource
import sys
import traceback

#: Sent to a cloud process to end its command loop.
_STOP = '_stop'


class CloudFailed(RuntimeError):
    """A cloud process failed a command, or died."""


def turns(names, jobs, processes):
    """The order in which every cloud runs every job ``processes`` times.

    Each job is run by every cloud before the next job, so that what a
    job measures in each cloud is measured minutes apart, not an hour;
    each turn reverses the order of the clouds and of the jobs, so that
    none always runs first.

    :returns: ``[(cloud name, job)]``.
    """
    order = []
    for turn in range(processes):
        forward = turn % 2 == 0
        for job in jobs if forward else jobs[::-1]:
            for name in names if forward else names[::-1]:
                order.append((name, job))
    return order


class LinePrefixed(object):
    """A stream writing whole lines, each after ``prefix``.

    Clouds being built side by side write their progress to the same
    terminal; a line is written once it is complete, so that theirs do not
    run into each other.
    """

    def __init__(self, prefix, stream=None):
        self.prefix = prefix
        self.stream = stream or sys.stdout
        self._partial = ''

    def write(self, text):
        lines = (self._partial + text).split('\n')
        self._partial = lines.pop()
        if lines:
            self.stream.write(''.join('%s%s\n' % (self.prefix, line)
                                      for line in lines))
            self.stream.flush()

    def flush(self):
        self.stream.flush()


class CloudProcess(object):
    """A forked process that builds a cloud and then serves commands.

    :param build: called in the child as ``build(serve)``; it builds the
        cloud, calls ``serve(handlers)`` (``{command: fn}``) once the cloud
        is ready, which returns when the benchmark stops the process, then
        tears the cloud down and returns a list of errors (strings).
    """

    def __init__(self, name, build):
        self.name = name
        self.errors = []
        self.info = {}
        self._done = False
        sys.stdout.flush()
        sys.stderr.flush()
        # One pipe each way: no socket pair, which the unit tests' eventlet
        # would make non-blocking.
        to_child, self._sent = multiprocessing.Pipe(duplex=False)
        self._received, from_child = multiprocessing.Pipe(duplex=False)
        self.pid = os.fork()
        if self.pid == 0:
            self._sent.close()
            self._received.close()
            _child(build, to_child, from_child)
        to_child.close()
        from_child.close()

    def ready(self):
        """Wait until the cloud is built; False if building it failed."""
        try:
            kind, payload = self._receive()
        except CloudFailed:
            return False
        if kind == 'ready':
            return True
        self._finished(payload)
        return False

    def ask(self, command, *args):
        """What the cloud process's handler for ``command`` returned.

        :raises CloudFailed: with the child's traceback if the handler
            raised, or if the process died.
        """
        self._sent.send((command, args))
        kind, payload = self._receive()
        if kind == 'ok':
            return payload
        if kind == 'done':
            self._finished(payload)
            payload = 'the cloud process left'
        message = '%s, %s: %s' % (self.name, command, payload)
        self.errors.append(message)
        raise CloudFailed(message)

    def stop(self):
        """Have the cloud torn down and the process leave.

        :returns: the errors of building, serving or tearing down.
        """
        if not self._done:
            try:
                self._sent.send((_STOP, ()))
                kind, payload = self._receive()
            except OSError:
                self._finished({'errors': [
                    '%s: the cloud process died' % self.name]})
            except CloudFailed:
                pass
            else:
                self._finished(payload)
        return self.errors

    def _receive(self):
        try:
            return self._received.recv()
        except (EOFError, OSError):
            message = '%s: the cloud process died' % self.name
            self._finished({'errors': [message]})
            raise CloudFailed(message)

    def _finished(self, payload):
        self._done = True
        self.errors.extend(payload.get('errors', ()))
        self.info.update(payload.get('info', {}))
        self._sent.close()
        self._received.close()
        os.waitpid(self.pid, 0)


def _child(build, commands, replies):
    code = 1
    try:
        def serve(handlers):
            replies.send(('ready', None))
            while True:
                command, args = commands.recv()
                if command == _STOP:
                    return
                try:
                    reply = ('ok', handlers[command](*args))
                except Exception:
                    reply = ('error', traceback.format_exc())
                sys.stdout.flush()
                replies.send(reply)

        try:
            errors = list(build(serve))
        except BaseException:
            errors = [traceback.format_exc()]
        sys.stdout.flush()
        replies.send(('done', {'errors': errors, 'info': {
            # ru_maxrss is in KiB on Linux.
            'peak_rss_mib': resource.getrusage(
                resource.RUSAGE_SELF).ru_maxrss / 1024.0}}))
        code = 0
    finally:
        # Never back into the benchmark's stack: its cleanups would run
        # twice.
        os._exit(code)
