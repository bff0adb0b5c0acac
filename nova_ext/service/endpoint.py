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
"""A service's HTTP endpoint: ``/metrics`` and ``/healthcheck``.

``/metrics`` is prometheus_client's exposition of the service's registry;
``/healthcheck`` answers 200 while the service is healthy and 503 when it
is not, with a JSON body saying why, for a load balancer or a monitoring
check. Served by a thread per request, beside the service's own threads.
"""

import json
import socketserver
import threading
from wsgiref import simple_server

from oslo_log import log as logging
import prometheus_client

LOG = logging.getLogger(__name__)


class _Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True


class _Handler(simple_server.WSGIRequestHandler):

    def log_message(self, format, *args):
        # Scrapes come every few seconds: not worth an INFO line each.
        LOG.debug('%s: ' + format, self.address_string(), *args)


class Endpoint(object):
    """The endpoint of one service.

    :param registry: the prometheus_client registry ``/metrics`` exposes.
    :param health: a callable returning ``(healthy, details)``, details a
        dict that the answer carries as JSON.
    """

    def __init__(self, host, port, registry, health):
        self.host, self.port = host, port
        self.registry = registry
        self.health = health
        self._metrics = prometheus_client.make_wsgi_app(registry)
        self._server = self._thread = None

    def __call__(self, environ, start_response):
        path = environ.get('PATH_INFO', '')
        if path == '/metrics':
            return self._metrics(environ, start_response)
        if path == '/healthcheck':
            return self._healthcheck(start_response)
        start_response('404 Not Found', [('Content-Type', 'text/plain')])
        return [b'/metrics or /healthcheck\n']

    def _healthcheck(self, start_response):
        try:
            healthy, details = self.health()
        except Exception as e:  # noqa: an unhealthy answer, not a 500
            healthy, details = False, {'error': '%s: %s' % (
                type(e).__name__, e)}
        body = json.dumps(dict(details, healthy=healthy),
                          sort_keys=True).encode() + b'\n'
        start_response('200 OK' if healthy else '503 Service Unavailable',
                       [('Content-Type', 'application/json'),
                        ('Content-Length', str(len(body)))])
        return [body]

    def start(self):
        """Listen, in a thread of its own; the port bound (0: any)."""
        self._server = simple_server.make_server(
            self.host, self.port, self, server_class=_Server,
            handler_class=_Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name='nova-ext-endpoint',
                                        daemon=True)
        self._thread.start()
        LOG.info('nova_ext endpoint on http://%s:%d/ (/metrics, '
                 '/healthcheck)', self.host, self.port)
        return self.port

    def stop(self):
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(5)
            self._server = self._thread = None


class Serving(object):
    """A service's component (``start()``/``stop()``) and its endpoint.

    :param endpoint: an :class:`Endpoint`, or None: the component alone.
    """

    def __init__(self, running, endpoint):
        self.running = running
        self.endpoint = endpoint

    def start(self):
        self.running.start()
        if self.endpoint is not None:
            self.endpoint.start()

    def stop(self):
        if self.endpoint is not None:
            self.endpoint.stop()
        self.running.stop()


def serving(conf, running, port, collector):
    """``running`` with the endpoint ``[nova_ext_metrics]`` asks for.

    :param port: the service's port option's value; 0 serves none.
    :param collector: a prometheus_client collector with a ``health()``
        method, as :class:`Endpoint` takes it.
    """
    if not port:
        return Serving(running, None)
    registry = prometheus_client.CollectorRegistry()
    registry.register(collector)
    return Serving(running, Endpoint(conf.nova_ext_metrics.bind_host, port,
                                     registry, collector.health))
