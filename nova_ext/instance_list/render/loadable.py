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
"""The network info of a list without details, loaded as Nova loads it.

Nova's list builds the Instance of every server it shows with its info
cache (the compute API's ``get_all`` always asks for it), and fails on a
stored network info that Nova's field refuses, whether its view shows it
or not. A list without details reads none (``narrow.LISTED``): the
network info of each server is loaded here, as a rendered row loads it
(``rows.load_network_info``), once per version of its rows (the index's
``read_at``, which changes whenever any of them is written),
and a server whose network info Nova could not load hands the page to
Nova, whose answer (its error) is the answer.
"""

from nova_ext.instance_list.render import fastpath
from nova_ext.instance_list.render import narrow
from nova_ext.instance_list.render import rows

#: Versions whose network info was loaded, beyond which all are forgotten.
MAX_CHECKED = 100000

#: {instance uuid: version of its rows whose network info Nova loads}
_CHECKED = {}
_MEMO = 'loadable.check_page'


def check_page(driver, page):
    """:func:`check_network_info` of a page's servers (``get_all``'s).

    Rows the driver keeps (``base.Page.memo``) are looked at until a page
    of them finds every server's network info loaded at its version: then
    not again. Nova loads a stored network info the same way every time,
    and a row's version moves whenever its server is written.
    """
    memo = getattr(page, 'memo', None)
    if memo is not None and memo.get(_MEMO):
        return
    if not check_network_info(driver, fastpath.distinct(page)) and (
            memo is not None):
        memo[_MEMO] = True


def check_network_info(driver, records):
    """Raise Unservable if Nova could not load a record's network info.

    :param records: the page's rows, each read with its version
        (``narrow.VERSION``); a row without one is loaded every time.
    :returns: whether any was loaded (none was loaded at its version
        before).
    """
    global _CHECKED
    unknown = [r['uuid'] for r in records
               if r.get(narrow.VERSION) is None or
               _CHECKED.get(r['uuid']) != r[narrow.VERSION]]
    if not unknown:
        return False
    if len(_CHECKED) > MAX_CHECKED:
        _CHECKED = {}
    # Each text is read with the version it is of: a row written between
    # the page's query and this read is loaded again by the next page.
    for uuid, version, stored in driver.network_info(unknown):
        rows.load_network_info(uuid, stored)
        if version is not None:
            _CHECKED[uuid] = version
    return True


def reset():
    """Forget what was loaded (tests)."""
    global _CHECKED
    _CHECKED = {}
