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
"""A server list's body written as Nova writes it, from kept JSON texts.

Nova's ``wsgi.Resource`` writes a body as ``jsonutils.dumps(body)``:
``json.dumps`` with its default separators, and ``to_primitive`` for the
values JSON has no type for. Such a text is made of the texts of its
parts, each written alike wherever it stands. A page from the render cache
is made of documents Nova's view rendered earlier, each as it was kept
but for the keys Nova adds to a page's documents afterwards, at their end
(``host_status``, ``security_groups``). :func:`dumps` writes such a
document (a :class:`Shown`) as the text of its kept document, written once
and kept with it, followed by what was added; anything else as Nova
writes it. A document whose kept keys or values were changed or replaced
is written whole, as Nova writes it.
"""

import json
import operator

from oslo_serialization import jsonutils

# jsonutils.dumps, which makes an encoder per call (json.dumps keeps one
# only for its default arguments): the same encoder, made once.
_dumps = json.JSONEncoder(default=jsonutils.to_primitive).encode


class Kept(dict):
    """A document kept in the render cache, and its JSON text once written.

    Never changed once kept: pages show copies (:class:`Shown`).
    """

    __slots__ = ('text',)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.text = None


class Shown(dict):
    """A page's copy of a :class:`Kept` document, which Nova may add to."""

    __slots__ = ('kept',)

    def __init__(self, kept):
        super().__init__(kept)
        self.kept = kept


class Written(object):
    """A whole body's text, written before (``page_bodies``)."""

    __slots__ = ('text',)

    def __init__(self, text):
        self.text = text


def dumps(body):
    """``jsonutils.dumps(body)``, with each :class:`Shown` from its texts.

    The documents are looked for where a list's body holds them: in the
    lists that are values of the body. A :class:`Written` body is its
    text.
    """
    if type(body) is Written:
        return body.text
    if type(body) is not dict or not all(type(k) is str for k in body):
        return _dumps(body)
    written = {}
    return '{%s}' % ', '.join(
        '%s: %s' % (json.dumps(name), _value(value, written))
        for name, value in body.items())


def _value(value, written):
    if type(value) is not list:
        return _dumps(value)
    return '[%s]' % ', '.join(
        _shown(item, written) if type(item) is Shown
        else _dumps(item) for item in value)


def _shown(doc, written):
    kept = doc.kept
    if type(kept) is not Kept or not kept or len(doc) < len(kept):
        return _dumps(doc)
    text = kept.text
    if text is None:
        # Written by one request or by several at once: the same text.
        text = kept.text = _dumps(kept)
    count = len(kept)
    keys = list(doc)
    # The kept keys first, in their order, each with the kept value itself.
    if (keys[:count] != list(kept) or
            not all(map(operator.is_, doc.values(), kept.values()))):
        return _dumps(doc)
    if len(keys) == count:
        return text
    added = keys[count:]
    if not all(type(key) is str for key in added):
        return _dumps(doc)
    return '%s%s}' % (text[:-1], ''.join(
        ', %s: %s' % (json.dumps(key), _added(doc[key], written))
        for key in added))


def _added(value, written):
    # A page's documents share values (a host's status, the groups Neutron
    # gave several servers): each is written once per body. The values
    # live as long as the body, so their ids are theirs throughout.
    text = written.get(id(value))
    if text is None:
        text = written[id(value)] = _dumps(value)
    return text
