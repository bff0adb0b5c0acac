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
"""How long the index's writers pause after failures in a row."""

import tenacity


def pauses(first, most):
    """The pause after the n-th failure in a row, as ``pause(n)``.

    tenacity's exponential wait, without its retry loop: the index's
    writers retry in loops of their own (the batcher's thread, which a stop
    interrupts), or are called again (a requeued batch, redelivered).

    :param first: seconds after the first failure, doubled at each next.
    :param most: the longest pause, in seconds.
    """
    wait = tenacity.wait_exponential(multiplier=first, max=most)
    state = tenacity.RetryCallState(None, None, (), {})

    def pause(failures):
        state.attempt_number = failures
        return wait(state)
    return pause
