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
"""The floor of a server list request in this cloud: a paste filter.

A nova-api (``nova-api-floor``) runs Nova's own WSGI application and
pipeline, uwsgi, keystonemiddleware's token validation and Nova's keystone
context, with this filter where nova_ext's goes. A ``GET`` of ``/servers``
or ``/servers/detail`` with ``X-Floor-Document: <name>`` is answered from
the document ``<documents>/<name>.json`` that ``nova-ext-bench cloud``
wrote (a page as the stock nova-api answered it), after Neutron is asked
for the page's security groups as Nova's detail view asks it; with
``X-Floor-Empty: 1`` the answer is an empty list instead, after the same
Neutron lookup. Nothing is read from any database: what remains is what
every list request in this cloud costs whatever serves it.
"""

import json
import os

import webob
import webob.dec

from nova.network import security_group_api

DOCUMENT_HEADER = 'X-Floor-Document'
EMPTY_HEADER = 'X-Floor-Empty'
#: The response headers a document keeps: Nova's, but for those the
#: pipeline's outer middleware sets again (request ids).
KEPT_HEADERS = ('Content-Type', 'OpenStack-API-Version',
                'X-OpenStack-Nova-API-Version', 'Vary')


def write_document(directory, name, detail, headers, body):
    """Store a page for the floor to answer with."""
    os.makedirs(directory, exist_ok=True)
    servers = [s['id'] for s in json.loads(body)['servers']]
    doc = {'detail': detail, 'servers': servers,
           'headers': [(k, v) for k, v in headers.items()
                       if k in KEPT_HEADERS],
           'body': body.decode('utf-8')}
    path = os.path.join(directory, name + '.json')
    with open(path + '.tmp', 'w') as f:
        json.dump(doc, f)
    os.replace(path + '.tmp', path)


class Floor(object):

    def __init__(self, application, documents):
        self.application = application
        self.documents = documents
        # name -> (mtime, document): read once per worker, as a rendered
        # page is kept in memory.
        self._loaded = {}

    def _document(self, name):
        path = os.path.join(self.documents, os.path.basename(name) + '.json')
        mtime = os.stat(path).st_mtime_ns
        loaded = self._loaded.get(name)
        if loaded is None or loaded[0] != mtime:
            with open(path) as f:
                doc = json.load(f)
            doc['body'] = doc['body'].encode('utf-8')
            loaded = self._loaded[name] = (mtime, doc)
        return loaded[1]

    @webob.dec.wsgify
    def __call__(self, request):
        name = request.headers.get(DOCUMENT_HEADER)
        if request.method != 'GET' or not name:
            return self.application
        doc = self._document(name)
        if doc['detail']:
            # Nova's detail view asks Neutron for every page it renders.
            security_group_api.get_instances_security_groups_bindings(
                request.environ['nova.context'],
                [{'id': uuid} for uuid in doc['servers']])
        response = webob.Response(headerlist=[])
        for key, value in doc['headers']:
            response.headers.add(key, value)
        if request.headers.get(EMPTY_HEADER):
            response.body = b'{"servers": []}'
        else:
            response.body = doc['body']
        return response


def filter_factory(global_conf, documents, **local_conf):
    def _filter(application):
        return Floor(application, documents)
    return _filter
