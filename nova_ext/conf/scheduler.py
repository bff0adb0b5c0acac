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

scheduler_group = cfg.OptGroup(
    'nova_ext_scheduler',
    title='nova_ext scheduler options',
    help="""
Options for nova_ext in nova-scheduler.

nova_ext is loaded into nova-scheduler by adding
``nova_ext.seams.scheduler.attach`` to
``[filter_scheduler]available_filters`` (after Nova's own
``nova.scheduler.filters.all_filters``). It adds no host filter; it appends
the request filters enabled here to Nova's request-filter pipeline, which
runs before the scheduler asks placement for allocation candidates.
""")

scheduler_opts = [
    cfg.ListOpt(
        'request_filters',
        default=[],
        help="""
Request filters to append to Nova's request-filter pipeline, by entry point
name in the ``nova_ext.scheduler.request_filters`` namespace, run in the
order given, after Nova's own.

An unknown or broken name stops nova-scheduler at start with an error that
names it.
"""),
]


def register_opts(conf):
    conf.register_group(scheduler_group)
    conf.register_opts(scheduler_opts, group=scheduler_group)


def list_opts():
    return {scheduler_group: scheduler_opts}
