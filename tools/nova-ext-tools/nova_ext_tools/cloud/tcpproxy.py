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
"""A TCP forwarder on 127.0.0.1, the way to one cell's database.

Stopping it is that cell's database server failing for every process at
once: the connections it carried are closed and new ones are refused,
which Nova tells as a cell that is down. Starting it again brings the cell
back.

    python -m nova_ext_tools.cloud.tcpproxy LISTEN_PORT TARGET_PORT
"""

import socket
import sys
import threading

HOST = '127.0.0.1'


def _pipe(source, sink):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _serve(client, target_port):
    try:
        upstream = socket.create_connection((HOST, target_port), timeout=10)
    except OSError:
        client.close()
        return
    upstream.settimeout(None)
    for source, sink in ((client, upstream), (upstream, client)):
        threading.Thread(target=_pipe, args=(source, sink),
                         daemon=True).start()


def main(argv=None):
    listen_port, target_port = (int(a) for a in (argv or sys.argv)[1:3])
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((HOST, listen_port))
    server.listen(128)
    print('forwarding %s:%d to %s:%d' % (HOST, listen_port, HOST,
                                         target_port), flush=True)
    while True:
        client, _ = server.accept()
        _serve(client, target_port)


if __name__ == '__main__':
    main()
