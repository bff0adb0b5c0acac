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
"""nova-ext-cloud: a real multi-process OpenStack with nova_ext, on
127.0.0.1 (``tox -e cloud``).

``start`` (the default) starts the cloud built in its state directory
again, with its servers and data, or builds one there if none was;
``build`` builds it anew, whatever was there. Either leaves it running.
``stop`` stops every process it started, by pid; ``status`` lists them.
"""

import argparse
import os
import sys

from nova_ext_tools.cloud import build
from nova_ext_tools.cloud import procs


def main(argv=None):
    parser = argparse.ArgumentParser(prog='nova-ext-cloud',
                                     description=__doc__.split('\n')[0])
    parser.add_argument('action', nargs='?', default='start',
                        choices=('start', 'build', 'stop', 'status'))
    parser.add_argument(
        '--state', default=os.environ.get('NOVA_EXT_CLOUD_STATE',
                                          '.cloud'),
        help='directory of its data, logs, pids and clouds.yaml '
             '(default $NOVA_EXT_CLOUD_STATE or ./.cloud)')
    args = parser.parse_args(argv)
    cloud = build.Cloud(args.state)
    if args.action == 'stop':
        cloud.stop()
        print('nova-ext-cloud: stopped')
        return 0
    if args.action == 'status':
        for name, (pid, running) in sorted(cloud.status().items()):
            print('%-32s %8s %s' % (name, pid,
                                    'running' if running else 'EXITED'))
        return 0
    try:
        if args.action == 'start' and cloud.built():
            cloud.resume()
        else:
            cloud.build()
    except procs.CloudError as e:
        print('nova-ext-cloud: %s' % e, file=sys.stderr)
        print('nova-ext-cloud: logs in %s; `nova-ext-cloud stop` stops '
              'what was started' % cloud.ps.logdir, file=sys.stderr)
        return 1
    print('nova-ext-cloud: running; OS_CLIENT_CONFIG_FILE=%s '
          'openstack --os-cloud admin server list' % cloud.lay.path(
              'clouds.yaml'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
