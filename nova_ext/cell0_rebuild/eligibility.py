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
"""Which servers in cell0 a rebuild may take back to scheduling.

The spec's rule: a server that never launched because the scheduler found
no host with enough resources. Its fault (recorded by the conductor when
it buried the server) says why: Nova's ``NoValidHost``, but not
``MaxRetriesExceeded``, which the spec leaves out. (A failed quota recheck
leaves the server in the cell that was chosen, not in cell0.) Everything
else keeps stock Nova's answer.
"""

from nova.compute import vm_states
from nova import exception as nova_exception

# A fault keeps the formatted message, not the exception's class; these are
# the fixed starts of the messages, taken from Nova's own formats so that a
# change in Nova changes them too.
_ELIGIBLE = (nova_exception.NoValidHost,)
_EXCLUDED = (nova_exception.MaxRetriesExceeded,)


def _prefix(exc_class):
    return str(exc_class.msg_fmt).split('%', 1)[0]


def failed_for_resources(fault_message):
    """Whether a cell0 fault says scheduling failed for lack of resources."""
    message = fault_message or ''
    if any(message.startswith(_prefix(c)) for c in _EXCLUDED):
        return False
    return any(message.startswith(_prefix(c)) for c in _ELIGIBLE)


def in_cell0(mapping):
    cell = mapping.cell_mapping if mapping is not None else None
    return cell is not None and cell.is_cell0()


def rebuildable(instance, fault):
    """Whether a server read from cell0 may be rebuilt from there.

    :param instance: the server, read from cell0.
    :param fault: its latest ``InstanceFault``, or None.
    """
    return (instance.vm_state == vm_states.ERROR and
            not instance.launched_at and
            fault is not None and failed_for_resources(fault.message))
