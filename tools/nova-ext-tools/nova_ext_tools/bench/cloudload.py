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
"""``nova-ext-bench cloud``: concurrent clients and a steady stream of writes.

A phase is ``clients`` threads, each sending ``requests`` requests one
after another to one nova-api, each on a connection of its own (nova-api
closes every connection after its answer); a phase's requests per second
are its requests over its wall time. The writer acts on servers through
both nova-apis in turn, at a steady rate, while the phases run.
"""

import concurrent.futures
import itertools
import random
import threading
import time

import requests

#: The writes, in the order each server goes through them: a server is
#: stopped and started only every few rounds of the pool, by when the fake
#: compute has long done the last.
ACTIONS = ('rename', 'metadata', 'stop', 'rename', 'metadata', 'start')


def percentile(values, share):
    """The nearest-rank percentile of ``values`` (``share`` in 0..1)."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(1, -(-int(share * 1000) * len(ordered) // 1000))
    return ordered[min(rank, len(ordered)) - 1]


class Target(object):
    """One nova-api as one user: where requests go, with what headers."""

    def __init__(self, name, endpoint, token, headers=None):
        self.name = name
        self.endpoint = endpoint.rstrip('/')
        self.headers = {'X-Auth-Token': token, 'Accept': 'application/json',
                        'OpenStack-API-Version': 'compute latest',
                        'X-OpenStack-Nova-API-Version': 'latest'}
        self.headers.update(headers or {})

    def get(self, url, session=requests):
        started = time.monotonic()
        r = session.get(self.endpoint + url, headers=self.headers,
                        timeout=600)
        return time.monotonic() - started, r


def phase(target, url, clients, per_client):
    """Run one phase: ``{'latencies': [...], 'seconds': wall, 'errors'}``."""
    latencies, errors = [], []
    lock = threading.Lock()

    def client():
        with requests.Session() as session:
            for _ in range(per_client):
                took, r = target.get(url, session)
                with lock:
                    if r.status_code == 200:
                        latencies.append(took)
                    else:
                        errors.append(r.status_code)
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        for f in [pool.submit(client) for _ in range(clients)]:
            f.result()
    return {'latencies': latencies, 'errors': errors,
            'seconds': time.monotonic() - started}


class Writer(object):
    """Writes at ``rate`` per second, alternating between ``targets``.

    :param servers: ``[server id]`` acted on in turn.
    """

    def __init__(self, targets, servers, rate, seed=0):
        self.targets = targets
        self.servers = list(servers)
        random.Random(seed).shuffle(self.servers)
        self.rate = rate
        self.done = {}
        self.refused = {}
        self._stop = threading.Event()
        self._thread = None
        self._turns = itertools.count()

    def __enter__(self):
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _run(self):
        interval = 1.0 / self.rate
        next_at = time.monotonic()
        with requests.Session() as session:
            while not self._stop.is_set():
                turn = next(self._turns)
                server = self.servers[turn % len(self.servers)]
                action = ACTIONS[(turn // len(self.servers)) % len(ACTIONS)]
                target = self.targets[turn % len(self.targets)]
                status = self._write(session, target, server, action, turn)
                counts = self.done if status < 300 else self.refused
                key = '%s %s' % (action, status) if status >= 300 else action
                counts[key] = counts.get(key, 0) + 1
                next_at += interval
                self._stop.wait(max(0.0, next_at - time.monotonic()))

    @staticmethod
    def _write(session, target, server, action, turn):
        url = '%s/servers/%s' % (target.endpoint, server)
        headers = dict(target.headers, **{
            'Content-Type': 'application/json'})
        if action == 'rename':
            r = session.put(url, headers=headers, timeout=120, json={
                'server': {'name': 'bench-%d' % turn}})
        elif action == 'metadata':
            r = session.put(url + '/metadata/turn', headers=headers,
                            timeout=120, json={'meta': {'turn': str(turn)}})
        else:
            r = session.post(url + '/action', headers=headers, timeout=120,
                             json={'os-%s' % action: None})
        return r.status_code

    def summary(self):
        return {'done': dict(self.done), 'refused': dict(self.refused)}
