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
"""Add the nova_ext filter to a Nova api-paste.ini, or take it out.

Used by the devstack plugin and by the functional harness, so that both
attach nova_ext exactly as the documentation tells an operator to::

    python -m nova_ext.api.paste_config /etc/nova/api-paste.ini
    python -m nova_ext.api.paste_config --remove /etc/nova/api-paste.ini

Both are idempotent, and the second gives back the file the first was
given. The file is edited line by line so that comments and layout
survive.
"""

import argparse
import re
import sys

FILTER = 'nova_ext'
SECTION = '[filter:%s]' % FILTER
FACTORY = 'paste.filter_factory = nova_ext.seams.api:filter_factory'
# Nova's compute API composites are built by this factory, one pipeline per
# auth strategy. nova_ext goes last before the application, so that it sees
# requests exactly as Nova's router does: after the middleware that sets
# environ['nova.context'] and, on /v2, after legacy_v2_compatible.
_COMPOSITE_USE = 'call:nova.api.auth:pipeline_factory_v21'
_CONTEXT_FILTERS = ('keystonecontext', 'noauth2')
_SECTION_RE = re.compile(r'^\s*\[(?P<name>[^\]]+)\]\s*$')
_KEY_RE = re.compile(r'^(?P<key>[^=#;\s][^=]*?)\s*=\s*(?P<value>.*)$')


def _sections(lines):
    """Yield (section name, first line index, end index)."""
    starts = [(i, _SECTION_RE.match(line).group('name'))
              for i, line in enumerate(lines) if _SECTION_RE.match(line)]
    for n, (start, name) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        yield name, start, end


def _with_filter(pipeline):
    words = pipeline.split()
    if FILTER in words:
        return pipeline
    if any(f in words[:-1] for f in _CONTEXT_FILTERS):
        words.insert(len(words) - 1, FILTER)
    return ' '.join(words)


def enable(text):
    """Add the nova_ext filter to every compute API pipeline of ``text``.

    Also defines the filter section. Applying it twice changes nothing.

    :raises ValueError: if no compute API pipeline could take the filter.
    """
    lines = text.splitlines()
    changed_pipelines = 0
    has_section = False
    for name, start, end in _sections(lines):
        if name == 'filter:%s' % FILTER:
            has_section = True
        body = lines[start + 1:end]
        if not any(_COMPOSITE_USE in line for line in body):
            continue
        for i in range(start + 1, end):
            found = _KEY_RE.match(lines[i])
            if not found or found.group('key') == 'use':
                continue
            new = _with_filter(found.group('value'))
            if FILTER in new.split():
                changed_pipelines += 1
            lines[i] = '%s = %s' % (found.group('key'), new)
    if not changed_pipelines:
        raise ValueError('no compute API pipeline (use = %s) with %s found'
                         % (_COMPOSITE_USE, ' or '.join(_CONTEXT_FILTERS)))
    if not has_section:
        lines += ['', SECTION, FACTORY]
    return '\n'.join(lines) + '\n'


def disable(text):
    """Take the nova_ext filter out of ``text``: what :func:`enable` added.

    The filter leaves every pipeline, and its section goes (with the blank
    line before it). Applying it twice changes nothing.
    """
    lines = text.splitlines()
    for name, start, end in list(_sections(lines)):
        if not any(_COMPOSITE_USE in line for line in lines[start + 1:end]):
            continue
        for i in range(start + 1, end):
            found = _KEY_RE.match(lines[i])
            if not found or found.group('key') == 'use':
                continue
            words = found.group('value').split()
            if FILTER in words:
                words.remove(FILTER)
                lines[i] = '%s = %s' % (found.group('key'), ' '.join(words))
    for name, start, end in list(_sections(lines)):
        if name == 'filter:%s' % FILTER:
            if start and not lines[start - 1].strip():
                start -= 1
            del lines[start:end]
            break
    return '\n'.join(lines) + '\n'


def _parser():
    parser = argparse.ArgumentParser(
        prog='python -m nova_ext.api.paste_config',
        description='Add the nova_ext filter to the compute API pipelines '
                    'of a Nova api-paste.ini, or take it out (--remove).')
    parser.add_argument('--remove', action='store_true',
                        help='take the filter out instead')
    parser.add_argument('path', metavar='API_PASTE_INI')
    return parser


def main(argv=None):
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    with open(args.path) as f:
        text = f.read()
    new = disable(text) if args.remove else enable(text)
    if new != text:
        with open(args.path, 'w') as f:
            f.write(new)
    return 0


if __name__ == '__main__':
    sys.exit(main())
