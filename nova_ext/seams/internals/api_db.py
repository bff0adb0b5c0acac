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
"""Nova's API database: the transaction context of its objects.

Nova's objects reach the API database through one module attribute,
``nova.db.api.api.context_manager`` (an oslo.db enginefacade transaction
context), whose ``reader`` and ``writer`` decorate the functions that read
or write it: inside, ``context.session`` is a session of the API database.
nova_ext's own queries of the API database are decorated the same way, so
that they run on Nova's engine, configured from ``[api_database]``, and on
whatever Nova's test fixtures put in its place.

The contract test is
``nova_ext.tests.unit.seams.test_internals_api_db``.
"""

import functools

from nova.db.api import api as api_db_api

from nova_ext.seams import internals

POINT = "nova_ext's queries of Nova's API database"


def _check():
    internals.check(POINT)


def _decorate(mode, fn):
    decorated = mode(fn)

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        _check()
        return decorated(*args, **kwargs)
    return checked


def reader(fn):
    """``fn(context, ...)`` in a reader transaction of the API database.

    As ``@nova.db.api.api.context_manager.reader``: within, the request
    context's ``session`` reads the API database.

    :raises UnsupportedNovaVersion: when called on a Nova nova_ext was not
        tested with; ``fn`` is not called.
    """
    return _decorate(api_db_api.context_manager.reader, fn)


def writer(fn):
    """``fn(context, ...)`` in a writer transaction of the API database.

    As ``@nova.db.api.api.context_manager.writer``; committed when the
    outermost such function returns.

    :raises UnsupportedNovaVersion: as :func:`reader`.
    """
    return _decorate(api_db_api.context_manager.writer, fn)


def engine():
    """The engine Nova's reads and writes of the API database use.

    A reader transaction of ``context_manager`` (which Nova's objects
    read the API database in) runs on its writer engine: Nova's
    ``nova.db.api.api.get_engine()``.

    :raises UnsupportedNovaVersion: as :func:`reader`.
    """
    _check()
    return api_db_api.get_engine()
