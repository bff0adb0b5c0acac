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
"""A real multi-process OpenStack cloud on one machine, with nova_ext on.

Every service is its own OS process bound to 127.0.0.1, started from the
cloud's virtualenv: MariaDB and RabbitMQ (Debian's), OVN's databases and
northd (Debian's), keystone, placement, glance and neutron, nova-api under
uwsgi (nova_ext's and a stock one), a super conductor and a conductor per
cell, nova-scheduler and one fake compute per cell, and nova_ext's own
services. nova_ext is installed and switched on as the install guide says
(doc/source/install/index.rst). A developer tool: nothing of nova_ext
imports it.
"""
