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
"""nova-compute on the cloud's fake driver (:mod:`nova_ext_tools.cloud.virt`).

Nova loads a compute driver from its own package only
(``nova.virt.<[DEFAULT]compute_driver>``). This runs Nova's own
nova-compute with the cloud's driver known there by the name the
computes' ``compute_driver`` gives (``nova.DRIVER``): ``python -m
nova_ext_tools.cloud.compute --config-file nova-compute-<cell>.conf``.
"""

import sys

from nova.cmd import compute

from nova_ext_tools.cloud import nova
from nova_ext_tools.cloud import virt


def main():
    sys.modules[nova.DRIVER_MODULE] = virt
    return compute.main()


if __name__ == '__main__':
    sys.exit(main())
