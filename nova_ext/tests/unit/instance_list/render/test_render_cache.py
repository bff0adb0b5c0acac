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
"""What tells two server documents of the render cache apart."""

import datetime

from nova.api.openstack.compute.views import servers as views_servers
from nova.api.openstack import wsgi as nova_wsgi
from oslo_utils import timeutils

from nova_ext.instance_list.render import render_cache
from nova_ext.instance_list.render import rows
from nova_ext.tests.unit import base

UUID = '6f64a4ed-c166-4a38-864f-4ed42f5da11d'


def _instance(**values):
    # A server not on a host yet: its zone is the row's, no cell is read.
    row = {'uuid': UUID, 'id': 7, 'deleted': 0, 'host': None,
           'availability_zone': 'az1', 'access_ip_v4': None,
           'access_ip_v6': None,
           'created_at': datetime.datetime(2026, 1, 1),
           'updated_at': datetime.datetime(2026, 1, 2),
           'deleted_at': None, 'launched_at': None, 'terminated_at': None,
           'metadata': [], 'system_metadata': []}
    row.update(values)
    instance = rows.IndexedInstance(row)
    instance.render_version = 1.5
    return instance


def _kwargs(**values):
    kwargs = {'provided_az': views_servers.AZ_NOT_IN_REQUEST_SPEC,
              'provided_sched_hints':
                  views_servers.SCHED_HINTS_NOT_IN_REQUEST_SPEC}
    kwargs.update(values)
    return kwargs


class TestKey(base.TestCase):

    def key(self, instance=None, **kwargs):
        return render_cache.key(('2.100',), None, instance or _instance(),
                                _kwargs(**kwargs), {})

    def test_same_inputs_same_key(self):
        self.assertEqual(self.key(provided_sched_hints={'a': ['1']}),
                         self.key(provided_sched_hints={'a': ['1']}))

    def test_every_input_of_show_tells_keys_apart(self):
        keys = [
            self.key(),
            self.key(provided_sched_hints={}),
            self.key(provided_sched_hints={'a': ['1']}),
            self.key(provided_sched_hints={'a': ['2']}),
            self.key(provided_sched_hints={'a': '1'}),
            self.key(provided_az=None),
            self.key(provided_az='None'),
            self.key(provided_az='az1'),
            self.key(show_extended_attr=True),
            self.key(bdms={UUID: [{'volume_id': 'v',
                                   'delete_on_termination': False}]}),
            self.key(_instance(availability_zone='az2')),
        ]
        self.assertEqual(len(keys), len(set(keys)))

    def test_a_new_version_of_the_row_is_a_new_key(self):
        other = _instance()
        other.render_version = 2.5
        self.assertNotEqual(self.key(), self.key(other))

    def test_nothing_is_cached_without_a_version(self):
        instance = _instance()
        instance.render_version = None
        self.assertIsNone(self.key(instance))

    def test_a_server_never_updated_is_not_cached(self):
        # Nova shows the time of each request as its "updated".
        self.assertIsNone(self.key(_instance(updated_at=None)))

    def test_a_page_looks_up_each_zone_once(self):
        # Servers not on a host: Nova's lookup gives the row's zone.
        zones = {}
        instances = [_instance(availability_zone=az)
                     for az in ('az1', 'az2', 'az1', None)]
        for instance in instances:
            self.assertEqual(
                self.key(instance),
                render_cache.key(('2.100',), None, instance, _kwargs(),
                                 zones))
        self.assertEqual({(None, 'az1'): 'az1', (None, 'az2'): 'az2',
                          (None, None): None}, zones)
        # The zone found for a host and row zone is the page's answer.
        zones[(None, 'az1')] = 'found'
        self.assertEqual('found', render_cache.key(
            ('2.100',), None, instances[0], _kwargs(), zones)[4])


class TestUnset(base.TestCase):

    def test_as_get_without_loading(self):
        for value in (None, datetime.datetime(2026, 1, 2)):
            instance = _instance(updated_at=value)
            self.assertEqual(value is None,
                             rows.unset(instance, 'updated_at'))
            # Not coerced by the question; the same answer once it is.
            self.assertNotIn('updated_at', vars(instance))
            instance.get('updated_at')
            self.assertIn('updated_at', vars(instance))
            self.assertEqual(value is None,
                             rows.unset(instance, 'updated_at'))
        instance = _instance()
        del instance._raw['updated_at']
        self.assertIsNone(instance.get('updated_at'))
        self.assertTrue(rows.unset(instance, 'updated_at'))
        self.assertTrue(rows.unset({'updated_at': None}, 'updated_at'))
        self.assertFalse(rows.unset({'updated_at': 1}, 'updated_at'))


class TestListedKey(base.TestCase):

    def test_the_name_and_request_tell_keys_apart(self):
        keys = [render_cache.listed_key(part, _instance(display_name=name))
                for part in (('2.1', 'http://a'), ('2.1', 'http://b'))
                for name in ('one', 'two', None)]
        self.assertEqual(len(keys), len(set(keys)))
        # The row's version is not in it: a list shows no other column.
        other = _instance(display_name='one', updated_at=None)
        other.render_version = None
        self.assertEqual(render_cache.listed_key(('2.1',), other),
                         render_cache.listed_key(
                             ('2.1',), _instance(display_name='one')))

    def test_a_server_without_a_name_is_not_cached(self):
        # Nova's partial document of a server of a down cell.
        self.assertIsNone(render_cache.listed_key(('2.1',), _instance()))


class TestKept(base.TestCase):

    def test_the_same_bytes_in_a_body_without_datetimes(self):
        launched = datetime.datetime(2026, 1, 2, 3, 4, 5, 678,
                                     tzinfo=datetime.timezone.utc)
        doc = {'id': UUID, 'OS-SRV-USG:launched_at': launched,
               'OS-SRV-USG:terminated_at': None,
               'created': timeutils.utcnow().strftime('%Y-%m-%dT%H:%M:%SZ'),
               'metadata': {'k': 'v'}, 'addresses': {'net': [{'v': 4}]}}
        kept = render_cache.kept(doc)
        self.assertFalse([v for v in kept.values()
                          if isinstance(v, datetime.datetime)])
        self.assertEqual(list(doc), list(kept))
        # As Nova's wsgi.Resource serialises a page of them.
        serializer = nova_wsgi.JSONDictSerializer()
        self.assertEqual(serializer.serialize({'servers': [doc, doc]}),
                         serializer.serialize({'servers': [kept, kept]}))
        self.assertIn('"2026-01-02T03:04:05.000678"',
                      serializer.serialize({'servers': [kept]}))
        # The document kept is a copy.
        self.assertIs(launched, doc['OS-SRV-USG:launched_at'])
