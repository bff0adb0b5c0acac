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
"""Nova's private names and module attributes that nova_ext uses.

One module per Nova area. Each function here is the only place nova_ext
touches that name; each checks that this Nova is one nova_ext was tested
with (``nova_ext.compat.check_nova_version``), and a contract test in
``nova_ext/tests/unit/seams/`` fails when Nova changes the name or
what nova_ext relies on of it. Process-wide hooks are installed by the
seam that needs them when it attaches, never when a module is imported.
"""

from nova_ext import compat

#: {point: the tested versions it passed for}, compared by identity:
#: hashing a SpecifierSet canonicalizes each of its versions, and every
#: list request makes several checks.
_PASSED = {}


def check(point):
    """Raise UnsupportedNovaVersion unless this Nova is a tested one.

    Remembered once it passes: the Nova a process runs does not change.
    It is asked again when ``compat.TESTED_NOVA`` is another object.

    :param point: the Nova name about to be used, for the message.
    """
    tested = compat.TESTED_NOVA
    if _PASSED.get(point) is tested:
        return
    compat.check_nova_version(point, tested)
    _PASSED[point] = tested


def tested(point, log, without):
    """``compat.tested`` with this package's check, cached once passed."""
    return compat.tested(point, log, without, check=check)
