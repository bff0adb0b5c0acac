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
"""Index rows dressed as Nova Instance objects, for Nova's own view code.

Building an ``objects.Instance`` from a database row coerces every field and
deserialises every joined blob, whether the server view reads it or not;
for a page of a thousand servers that is most of the time left once the
cells are no longer queried one by one. :class:`IndexedInstance` gives Nova's
server view (``nova.api.openstack.compute.views.servers``) exactly what it
reads of an Instance, with the values an Instance would hold, straight from
the row, and deserialises the flavor, network info and trusted certificates
only when the view asks for them.

Where a value is not the row's as it stands, the Instance would have coerced
it, and so does this class (``_COERCED``). What the view might read that the
row cannot give exactly raises ``Unservable``, and the request is rendered
by Nova instead.
"""

from nova import conf as nova_conf
from nova.network import model as network_model
from nova import objects
from nova import utils
from oslo_serialization import jsonutils

from nova_ext.index import ids
from nova_ext.instance_list import base

CONF = nova_conf.CONF


#: Columns an Instance holds as other types than the row's: netaddr
#: addresses (rendered with str(), the canonical form, not the stored one)
#: and timezone-aware datetimes. Coerced by the Instance's own fields.
_COERCED = ('access_ip_v4', 'access_ip_v6', 'created_at', 'updated_at',
            'deleted_at', 'launched_at', 'terminated_at')


#: Columns whose stored text an Instance may refuse: Nova's list builds
#: the Instance of every server it shows, and fails on such a value,
#: whether its view shows the column or not. Only their stored text is
#: read on every page (narrow.LISTED); refused, the page is Nova's.
REFUSABLE = ('access_ip_v4', 'access_ip_v6')
#: ``(column, stored text)`` an Instance was seen to take, beyond which
#: all are forgotten: checking one is a set lookup.
_TAKEN = set()
MAX_TAKEN = 100000


def loaded(uuid, what, load, *args):
    """``load(*args)``; what it raises is Unservable.

    A stored value Nova's loader refuses fails Nova's own list: the page
    is handed to Nova, whose answer (its error) is the answer.
    """
    try:
        return load(*args)
    except Exception as e:
        raise base.Unservable('the %s of instance %s cannot be loaded: '
                              '%s: %s' % (what, uuid, type(e).__name__, e))


def _coerce(name, value):
    if value is None:
        return None
    return objects.Instance.fields[name].coerce(None, name, value)


def check_refusable(uuid, values):
    """Raise Unservable if an Instance refuses a stored value of ``values``.

    Of the :data:`REFUSABLE` columns: as making an :class:`IndexedInstance`
    of the row does.
    """
    global _TAKEN
    for name in REFUSABLE:
        value = values.get(name)
        if value is None or (name, value) in _TAKEN:
            continue
        loaded(uuid, name, _coerce, name, value)
        if len(_TAKEN) > MAX_TAKEN:
            _TAKEN = set()
        _TAKEN.add((name, value))


def unset(instance, name):
    """Whether ``instance.get(name)`` is None, not loading its value.

    For a column of an :class:`IndexedInstance` whose coercion waits for
    its first read: a stored value is never coerced to None.
    """
    if type(instance) is IndexedInstance:
        values = instance.__dict__
        if name in values:
            return values[name] is None
        return instance._raw.get(name) is None
    return instance.get(name) is None


def _deleted(row):
    # As Instance._from_db_object: Nova soft-deletes by writing the row's id.
    return row['deleted'] == row['id']


def check_name_template():
    """Raise Unservable unless instance names come from the id alone.

    ``OS-EXT-SRV-ATTR:instance_name`` is ``instance_name_template % id``; a
    template that names other fields (``%(uuid)s``) is rendered by Nova.
    """
    try:
        CONF.instance_name_template % 1
    except (TypeError, KeyError, ValueError):
        raise base.Unservable('instance_name_template %r names fields other '
                              'than the id' % CONF.instance_name_template)


def _flavor(db_flavor):
    flavor = objects.Flavor.obj_from_primitive(
        jsonutils.loads(db_flavor)['cur'])
    # As Instance._flavor_from_db, for flavors stored before these fields
    # were.
    if 'disabled' not in flavor:
        flavor.disabled = False
    if 'is_public' not in flavor:
        flavor.is_public = True
    return flavor


def load_network_info(uuid, stored):
    """The NetworkInfo Nova's info cache holds of ``stored``, or None.

    As Nova's field makes it of the stored text (``NetworkInfo.hydrate``).

    :raises Unservable: Nova cannot load it.
    """
    if stored is None:
        return None
    return loaded(uuid, 'network info', network_model.NetworkInfo.hydrate,
                  stored)


def _trusted_certs(db_certs):
    return objects.TrustedCerts.obj_from_primitive(jsonutils.loads(db_certs))


class IndexedInstance(object):
    """One index row, read the way Nova's server view reads an Instance.

    The row's values are the object's attributes, so that reading one
    (the view reads about twenty per server) is Python's own lookup; what
    the class keeps for itself is in slots, outside the values.
    """

    __slots__ = ('_raw', '_flavors', 'cell_id', '__dict__')

    def __init__(self, row, flavors=None, metadata=None,
                 system_metadata=None):
        """Read ``row``, an index record of Nova's instance query.

        ``row`` is read, never changed: a driver may hand out the rows it
        keeps (``base.Page``).

        :param flavors: a dict shared by the rows of one page, in which
            equal stored flavors are deserialised once.
        :param metadata: the instance's metadata rows, as Nova's manual
            join gives them; None: the row's own ``metadata``. As
            ``system_metadata`` for the system metadata.
        """
        values = self.__dict__
        values.update(row)
        if metadata is not None:
            values['metadata'] = metadata
        if system_metadata is not None:
            values['system_metadata'] = system_metadata
        values['deleted'] = _deleted(row)
        values['id'] = ids.source_id(row['id'])
        # Coerced when first read: a page served from the render cache
        # reads few of them. A column the row was read without stays absent.
        self._raw = {name: values.pop(name) for name in _COERCED
                     if name in values}
        check_refusable(row['uuid'], self._raw)
        values['metadata'] = utils.instance_meta(values)
        values['system_metadata'] = utils.instance_sys_meta(values)
        values.setdefault('fault', None)
        self.cell_id = ids.cell_id(row['id'])
        self._flavors = {} if flavors is None else flavors

    def __getattr__(self, name):
        # Python asks here only for names the values lack: the columns
        # whose coercion waits for their first read (__init__).
        if name in IndexedInstance.__slots__:
            # Not set yet (an object made without __init__, as copy does).
            raise AttributeError(name)
        try:
            raw = self._raw[name]
        except KeyError:
            raise AttributeError(name)
        value = self.__dict__[name] = loaded(self.uuid, name, _coerce,
                                             name, raw)
        return value

    def __getitem__(self, name):
        return getattr(self, name)

    def __contains__(self, name):
        return name in self.__dict__ or name in self._raw

    def get(self, name, default=None):
        try:
            return getattr(self, name)
        except AttributeError:
            return default

    @property
    def name(self):
        return CONF.instance_name_template % self.id

    def _extra(self, field):
        extra = self.__dict__.get('extra')
        return extra[field] if extra else None

    def get_flavor(self):
        flavor = self.__dict__.get('_flavor')
        if flavor is None:
            db_flavor = self._extra('flavor')
            if not db_flavor:
                # Nova would lazy-load it from the cell, which the row
                # cannot do.
                raise base.Unservable('instance %s has no flavor in its '
                                      'row' % self.uuid)
            flavor = self._flavors.get(db_flavor)
            if flavor is None:
                # The view only reads it, so servers of one flavor share it.
                flavor = self._flavors[db_flavor] = loaded(
                    self.uuid, 'flavor', _flavor, db_flavor)
            self.__dict__['_flavor'] = flavor
        return flavor

    def get_network_info(self):
        cache = self.__dict__.get('info_cache')
        if cache is None:
            return network_model.NetworkInfo.hydrate([])
        return load_network_info(self.uuid, cache['network_info'])

    @property
    def trusted_certs(self):
        db_certs = self._extra('trusted_certs')
        if db_certs is None:
            return None
        return loaded(self.uuid, 'trusted certificates',
                      _trusted_certs, db_certs)
