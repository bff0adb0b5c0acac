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
"""``nova.api.openstack.wsgi.ResponseObject``: a body written by nova_ext.

Nova's ``wsgi.Resource`` makes a controller's response with
``ResponseObject(body).serialize(request, content_type)``, which writes the
body with the object's ``serializer`` (a ``JSONDictSerializer``: the text
of ``jsonutils.dumps(body)``) and sets the status and headers. nova_ext
writes a server list's body with a function of its own that gives that
same text (``nova_ext.instance_list.render.encode``), handed to the
ResponseObject as its serializer; the rest of the response is Nova's.

The contract test is
``nova_ext.tests.unit.seams.test_internals_wsgi_response``.
"""

from nova.api.openstack import wsgi as nova_wsgi

from nova_ext.seams import internals

POINT = 'nova.api.openstack.wsgi.ResponseObject.serializer'


class _Serializer(object):
    """What ResponseObject.serialize asks of its serializer."""

    def __init__(self, dumps):
        self._dumps = dumps

    def serialize(self, data, action='default'):
        return str(self._dumps(data))


def serialize(body, request, content_type, dumps):
    """``ResponseObject(body).serialize(...)``, the body written by ``dumps``.

    :param dumps: a function of the body giving the text
        ``jsonutils.dumps`` gives of it.
    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    internals.check(POINT)
    response = nova_wsgi.ResponseObject(body)
    response.serializer = _Serializer(dumps)
    return response.serialize(request, content_type)
