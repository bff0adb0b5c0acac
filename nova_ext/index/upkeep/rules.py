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
"""Why nova-api hands list requests to Nova, for the index's own state.

nova-api applies these rules to each list request (the ``index`` driver,
``nova_ext.instance_list``); ``nova-ext-manage index status``, the
``healthy`` metric and ``nova-ext-status`` apply them to what the index
database shows, so that all say what nova-api does. Each function returns
the reason, or None where the rule lets the index answer. What depends on
the request (a cell down, its filters, a changed instance's cell
unreadable) only the request can tell.

Three quantities, each with its own name:

* ``pending``: the changes recorded in the index (marks) and not applied
  yet. A list request applies them itself first, up to ``catch_up_limit``.
* ``unrecorded`` and ``unrecorded_lag``: the changes one nova-api process
  captured but could not record in the index, and the age of the oldest,
  both by that process alone (its own clock). No other process can apply
  them, so that process hands its lists to Nova until they are recorded,
  and leaves the index off past ``max_lag``.
* ``silent`` holders: the processes that hold marks and have not vouched
  lately, by a heartbeat, that they recorded every change they learned
  of. Only the reading process tells lately, by its own clock.
* ``oldest_pending_age``: the age of the oldest mark, by the clock of the
  host that recorded it against the reader's. Informational: host clocks
  differ, and the marks are applied by the requests whatever their age, so
  it decides nothing.
"""


def schema(revision, head, known=None):
    """Why this nova_ext does not use an index at ``revision``, and the fix.

    :param head: the revision this nova_ext needs.
    :param known: every revision this nova_ext knows, if the caller has
        them: a revision outside them is a later nova_ext's (a rolling
        upgrade), which this host's nova_ext must be upgraded to.
    """
    if revision == head:
        return None
    if known is not None and revision is not None and revision not in known:
        return ('the index schema is at revision %s, which this nova_ext '
                '(at %s) does not know: upgrade nova_ext on this host' % (
                    revision, head))
    return ('the index schema is at revision %s, this nova_ext needs %s: run '
            '"nova-ext-manage index db_sync"' % (revision, head))


def unrecorded_lag(seconds, max_lag):
    """Why a process leaves the index off for ``retry_interval``.

    :param seconds: the age of the oldest change it could not record.
    """
    if seconds > max_lag:
        return 'changes unrecorded for %.1f s (max_lag %.1f s)' % (
            seconds, max_lag)
    return None


def unrecorded(count):
    """Why a process hands each list request to Nova.

    :param count: the changes it captured and could not record yet.
    """
    if count:
        return '%d captured changes not recorded in the index yet' % count
    return None


def silent(holders, window):
    """Why a process hands each list request to Nova, for other processes.

    :param holders: the holders that have not vouched in the last
        ``window`` seconds (by this process's own reads,
        ``nova_ext.index.marks.witness``), or None if it has not read
        them in the last ``window`` seconds. A holder's heartbeat vouches
        only once it has recorded every change it learned of.
    """
    if holders is None:
        return 'the holders of marks not read in the last %.1f s' % window
    if holders:
        return ('%d holders of marks have not shown in %.1f s that they '
                'recorded their changes (%s)' % (
                    len(holders), window, ', '.join(holders[:3] + (
                        ['...'] if len(holders) > 3 else []))))
    return None


def pending(count, limit, at_least=False):
    """Why list requests are Nova's while ``count`` marks wait.

    :param at_least: ``count`` is a lower bound (a request reads at most
        ``limit + 1`` marks).
    """
    if count > limit:
        return '%s%d marks pending, catch_up_limit %d' % (
            'at least ' if at_least else '', count, limit)
    return None
