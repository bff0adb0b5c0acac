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
"""Two list answers compared at the moments they were made.

Nova shows a server that has no ``updated_at`` (a build request, or an
instance its cell has not updated since creating it) as updated at the
time of the request. Two answers made a moment apart can differ there
and both be right; a document kept from an earlier request cannot. So
where two answers differ in a server's ``updated``, and each value is the
time its own request ran (to the second), the value is blanked in both;
any other difference stays. The bodies are then compared serialised
again, which gives back the bytes of each (Nova's serialiser), or else
not blanked.
"""

import calendar
import time

from oslo_serialization import jsonutils

BLANK = '<request time>'


class Answer(object):
    """A response's status and text, and when its request ran."""

    def __init__(self, response, started, ended):
        self.status_code = response.status_code
        self.text = response.text
        self.started = started
        self.ended = ended

    def json(self):
        return jsonutils.loads(self.text)


def get(fetch, *args):
    """``fetch(*args)`` as an :class:`Answer`."""
    started = time.time()
    response = fetch(*args)
    return Answer(response, started, time.time())


def _seconds(value):
    try:
        return calendar.timegm(time.strptime(value, '%Y-%m-%dT%H:%M:%SZ'))
    except (TypeError, ValueError):
        return None


def _during(value, answer):
    at = _seconds(value)
    return at is not None and int(answer.started) <= at <= answer.ended


def _servers(answer):
    if answer.status_code != 200:
        return None
    try:
        body = answer.json()
    except ValueError:
        return None
    if not isinstance(body, dict) or not isinstance(body.get('servers'),
                                                    list):
        return None
    if jsonutils.dumps(body) != answer.text:
        # Serialised again, the bytes would differ: compared as they came.
        return None
    return body


def same_moment(want, got):
    """``(status, text)`` of both answers, request times blanked.

    :param want: Nova's :class:`Answer`.
    :param got: the index's.
    """
    bodies = _servers(want), _servers(got)
    if None in bodies:
        return ((want.status_code, want.text), (got.status_code, got.text))
    nova = {s.get('id'): s for s in bodies[0]['servers']}
    blanked = False
    for server in bodies[1]['servers']:
        other = nova.get(server.get('id'))
        if (other is None or 'updated' not in server or
                other.get('updated') == server['updated']):
            continue
        if (_during(server['updated'], got) and
                _during(other.get('updated'), want)):
            server['updated'] = other['updated'] = BLANK
            blanked = True
    if not blanked:
        # The bytes as they came, where nothing was blanked.
        return ((want.status_code, want.text), (got.status_code, got.text))
    return ((want.status_code, jsonutils.dumps(bodies[0])),
            (got.status_code, jsonutils.dumps(bodies[1])))
