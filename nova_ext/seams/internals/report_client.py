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
"""``nova.scheduler.client.report``: the report client's provider cache.

``SchedulerReportClient.set_traits_for_provider`` compares the traits it
is given with its provider-tree cache (``_provider_tree``), skips the
write when they match, and fails on a provider the cache does not hold.
In nova-compute the resource tracker fills that cache; the compute status
engine runs elsewhere, so it records there what placement just answered
before each write.

The contract test is
``nova_ext.tests.unit.seams.test_internals_report_client``.
"""


from nova_ext.seams import internals

POINT = 'nova.scheduler.client.report.SchedulerReportClient._provider_tree'


def _check():
    internals.check(POINT)


def cache_provider_traits(client, rp_uuid, traits, generation):
    """Record a root provider's traits and generation in ``client``'s cache.

    :param client: a ``SchedulerReportClient``.
    :param rp_uuid: the provider; added to the cache as a root provider
        named by its UUID when the cache does not hold it.
    :param traits: the provider's traits as placement just gave them.
    :param generation: the provider generation placement gave with them.
    :raises UnsupportedNovaVersion: on a Nova nova_ext was not tested with.
    """
    _check()
    tree = client._provider_tree
    if not tree.exists(rp_uuid):
        tree.new_root(rp_uuid, rp_uuid, generation=generation)
    tree.update_traits(rp_uuid, traits, generation=generation)
