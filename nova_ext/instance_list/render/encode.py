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

import array
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
    """A whole body's text, written before (``page_bodies``).

    ``starts`` and ``ends``: where the text of each item of one list of
    the body begins and ends in it (:func:`written`), or None.
    """

    __slots__ = ('text', 'starts', 'ends')

    def __init__(self, text, starts=None, ends=None):
        self.text = text
        self.starts = starts
        self.ends = ends

    def patched(self, texts):
        """This body with items of its list written anew.

        :param texts: ``{position in the list: the item's text}``.
        :returns: a :class:`Written` of the same list.
        """
        text, starts, ends = self.text, self.starts, self.ends
        pieces = []
        at = 0
        for n in sorted(texts):
            pieces.append(text[at:starts[n]])
            pieces.append(texts[n])
            at = ends[n]
        pieces.append(text[at:])
        # The items before the first one written anew stay where they are.
        first = min(texts)
        new_starts, new_ends = starts[:first], ends[:first]
        shift = 0
        for n in range(first, len(starts)):
            start = starts[n] + shift
            if n in texts:
                shift += len(texts[n]) - (ends[n] - starts[n])
            new_starts.append(start)
            new_ends.append(ends[n] + shift)
        return Written(''.join(pieces), new_starts, new_ends)


def dumps(body):
    """``jsonutils.dumps(body)``, with each :class:`Shown` from its texts.

    The documents are looked for where a list's body holds them: in the
    lists that are values of the body. A :class:`Written` body is its
    text.
    """
    if type(body) is Written:
        return body.text
    return written(body).text


def written(body, name=None):
    """``Written(dumps(body))``, with where the items of a list stand.

    With ``name``, the positions in the text of each item of the list
    ``body[name]``; a body without such a list is written without them.
    """
    if type(body) is not dict or not all(type(k) is str for k in body):
        return Written(_dumps(body))
    values = {}
    parts = []
    at = 1
    starts = ends = None
    for key, value in body.items():
        head = '%s: ' % json.dumps(key)
        if key == name and type(value) is list:
            texts = [item(doc, values) for doc in value]
            starts, ends = array.array('q'), array.array('q')
            start = at + len(head) + 1
            for text in texts:
                starts.append(start)
                ends.append(start + len(text))
                start += len(text) + 2
            part = '%s[%s]' % (head, ', '.join(texts))
        else:
            part = head + _value(value, values)
        parts.append(part)
        at += len(part) + 2
    return Written('{%s}' % ', '.join(parts), starts, ends)


def item(doc, written=None):
    """The text of ``doc`` as :func:`dumps` writes it in a body's list.

    :param written: the texts of values a body shares (:func:`_added`),
        kept for the body being written; None for a document alone.
    """
    if type(doc) is Shown:
        return _shown(doc, {} if written is None else written)
    return _dumps(doc)


def _value(value, written):
    if type(value) is not list:
        return _dumps(value)
    return '[%s]' % ', '.join(item(doc, written) for doc in value)


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
