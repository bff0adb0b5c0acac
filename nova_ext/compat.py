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

"""Which Nova versions nova_ext's attachment points were tested with.

Where Nova loads nova_ext through its own configuration (api-paste.ini,
notification drivers) nothing of Nova's is changed. Where nova_ext has to
reach into Nova (the scheduler's request-filter list), it does so only for
the Nova versions listed here; on any other it refuses, logs why, and Nova
runs unchanged.
"""

import importlib.metadata

from oslo_log import log as logging
from packaging import specifiers
from packaging import version

from nova_ext import exception

LOG = logging.getLogger(__name__)

#: Nova releases every attachment point was tested with (see
#: doc/source/admin/seams.rst). Widen only together with a CI run against
#: the new release.
TESTED_NOVA = specifiers.SpecifierSet('>=34.0.0,<35.0.0')


def nova_version():
    return version.Version(importlib.metadata.version('nova'))


def tested(point, log, without=None, check=None):
    """Whether this Nova is a tested one for ``point``; if not, say so.

    For what is about to attach: on an untested Nova it does not, the
    refusal is logged at ERROR by the attaching module's ``log``, and the
    process goes on ``without`` it.

    :param without: what the process does instead, for the message.
    :param check: the version check to make; :func:`check_nova_version`
        by default.
    """
    try:
        (check or check_nova_version)(point)
    except exception.UnsupportedNovaVersion as e:
        if without:
            log.error('%s; %s', e, without)
        else:
            log.error('%s', e)
        return False
    return True


def check_nova_version(point, tested=None):
    """Raise UnsupportedNovaVersion unless this Nova is in ``tested``.

    :param point: what is being attached, for the message.
    :param tested: a SpecifierSet; TESTED_NOVA by default.
    """
    tested = TESTED_NOVA if tested is None else tested
    found = nova_version()
    if found not in tested:
        raise exception.UnsupportedNovaVersion(point, found, tested)
    return found
