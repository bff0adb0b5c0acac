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
"""The online data migration contract (``nova_ext.object_migrations``).

Same contract as the functions in ``nova-manage db
online_data_migrations`` (``nova/cmd/manage.py``): called repeatedly with
a batch size until it reports nothing left to do, while the cloud runs.
"""

import abc


class ObjectMigration(abc.ABC):
    """One online data migration."""

    @abc.abstractmethod
    def __call__(self, context, max_count):
        """Migrate at most ``max_count`` records.

        Must be idempotent and safe to run concurrently with itself and with
        a running cloud: a record already migrated is neither found nor
        migrated again.

        :param context: an admin ``nova.context.RequestContext``.
        :param max_count: the largest number of records to look at.
        :returns: ``(found, done)``: how many records needing migration
            were found in this batch and how many of those were migrated.
            ``found == 0`` means the migration is complete; records that
            can never be migrated must not be counted as found forever, or
            the caller could never finish.
        """
