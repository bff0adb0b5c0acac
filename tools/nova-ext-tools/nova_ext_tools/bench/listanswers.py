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
"""The answers ``nova-ext-bench list`` compares with Nova's.

Each index path's first answer to every query is made in a child forked
from the cloud's process (:func:`first_answers`); listcloud.py compares
them with Nova's.
"""

import functools
import time

from oslo_serialization import jsonutils

from nova_ext_tools.bench import isolate
from nova_ext_tools.bench import listtime


def first_answers(queries, paths, call, special=None):
    """Each path's first answer to every query, in a forked child per path.

    The timed children are forked afterwards from a process that has run
    none of the index paths, as a nova-api process configured for one
    path never runs the others: children forked from a process that has
    made these answers itself are slower (the ``cached`` path by about 50
    ms of 200 at 2 cells).

    :param special: ``{path: fn(queries, call)}`` for paths that make
        their answers otherwise, in their child (listchurn.answers):
        each answer as from :func:`_answers_in_child`, optionally followed
        by Nova's status and body in the same state, which the answer is
        then compared with.
    :returns: ``(got, wants)``: ``got`` as :func:`answers`, for every
        path, keyed ``(query name, path)``, each response an
        :class:`Answer`; ``wants``, keyed alike, Nova's answers made
        beside a special path's, as :class:`Answer`.
    """
    special = special or {}
    jobs = {path: functools.partial(_answers_in_child, queries, path, call,
                                    special.get(path))
            for path in paths}
    runs = isolate.in_processes(
        jobs, 1, listtime.CHILD_TIMEOUT + listtime.CHILD_TIMEOUT_PER_ROUND,
        stall=listtime.CHILD_STALL)
    got, wants = {}, {}
    for path in paths:
        for name, answer in runs[path][0]:
            status, content, served, ms = answer[:4]
            got[(name, path)] = (_answer(status, content), served, ms)
            if len(answer) > 4:
                wants[(name, path)] = _answer(*answer[4:6])
    return got, wants


def answers(queries, path, call):
    """``path``'s first answer to every query, in this process (a child).

    :returns: ``{query name: (response, served, ms)}``.
    """
    out = {}
    for query in queries:
        started = time.perf_counter()
        response, served = call(path, query)
        out[query.name] = (response, served,
                           (time.perf_counter() - started) * 1000.0)
        isolate.heartbeat()
    return out


def _answer(status, content):
    # Latin-1 maps every byte to one character: JSON carries the body byte
    # for byte.
    return Answer(status, content.encode('latin-1'))


def _answers_in_child(queries, path, call, special=None):
    listtime.fresh_process()
    if special is not None:
        return special(queries, call)
    return [(name, (response.status_code, response.content.decode('latin-1'),
                    served, ms))
            for name, (response, served, ms) in answers(
                queries, path, call).items()]


class Answer(object):
    """A response carried back from a child, as far as it is compared."""

    def __init__(self, status_code, content):
        self.status_code = status_code
        self.content = content

    @property
    def text(self):
        return self.content.decode('utf-8', 'replace')

    def json(self):
        return jsonutils.loads(self.content)
