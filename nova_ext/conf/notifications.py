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

from oslo_config import cfg

notifications_group = cfg.OptGroup(
    'nova_ext_notifications',
    title='nova_ext notification driver options',
    help="""
Options for the ``nova_ext`` oslo.messaging notification driver.

The driver is attached to a Nova process by adding ``nova_ext`` to
``[oslo_messaging_notifications]driver`` (next to ``messagingv2``, which
still delivers to the message bus). It hands versioned notifications to
the nova_ext consumers enabled in this process, on a worker thread of its
own, so it never delays the Nova code that emitted them.
""")

notifications_opts = [
    cfg.ListOpt(
        'consumers',
        default=[],
        help="""
Notification consumers to enable, by entry point name in the
``nova_ext.notifications.consumers`` namespace.

A consumer is also enabled when the capability it serves is switched on in
that capability's own option group; this list is for consumers that have
no other switch, and for third-party consumers.
"""),
    cfg.IntOpt(
        'queue_size',
        default=10000,
        min=1,
        help="""
How many notifications the driver holds for its consumers before it
drops new ones.

The driver never blocks the emitting thread: when consumers fall this far
behind, a notification that does not fit is counted as dropped and logged.
The in-process driver has no acknowledgement to give back, so anything
that must not lose a notification (for example the instance index) runs
its own listener on the message bus and reconciles periodically.
"""),
]


def register_opts(conf):
    conf.register_group(notifications_group)
    conf.register_opts(notifications_opts, group=notifications_group)


def list_opts():
    return {notifications_group: notifications_opts}
