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
"""Notification consumers: their contract (``base``) and their loading."""

from nova_ext.notifications import base
from nova_ext import plugins

NAMESPACE = 'nova_ext.notifications.consumers'


def load_consumers(conf):
    """The enabled consumers as ``[(name, consumer)]``, in order."""
    return plugins.load_switched(NAMESPACE, base.Consumer, conf,
                                 conf.nova_ext_notifications.consumers)
