"""A test process that outlives its run: its threads' stacks, then exit.

A test that hangs where no test timeout reaches it (a thread blocked in C,
a read from a subprocess, a test case without ``OS_TEST_TIMEOUT``'s
fixture) would otherwise hold its stestr worker, and the whole run, until
CI kills it without a word of where. With ``NOVA_EXT_TEST_DEADLINE`` set
(seconds; tox sets it), a process that imports the tests dumps the stack
of each of its threads on standard error that long after, and exits:
stestr reports the test it was in as failed, and the run goes on.
"""

import faulthandler
import os
import sys

ENV = 'NOVA_EXT_TEST_DEADLINE'


def arm(environ=os.environ):
    """Start this process's deadline, if ``NOVA_EXT_TEST_DEADLINE`` says.

    :returns: its seconds, or None.
    """
    seconds = environ.get(ENV)
    if not seconds:
        return None
    seconds = float(seconds)
    # Standard error itself: the tests capture sys.stderr
    # (OS_STDERR_CAPTURE), and a capture dies with the process.
    faulthandler.dump_traceback_later(seconds, exit=True,
                                      file=sys.__stderr__)
    return seconds
