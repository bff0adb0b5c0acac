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

"""Loading nova_ext plugins with stevedore.

Every plugin kind has its own namespace and its own abstract base class.
Loading goes through the helpers here so that every kind fails the same
way: a missing name, an entry point that does not import, or an object of
the wrong kind raises a :class:`nova_ext.exception.NovaExtError` naming
the namespace and the entry point, at start-up, instead of a capability
silently doing nothing.
"""

import collections
import importlib.metadata

from oslo_log import log as logging
from stevedore import driver as sd_driver
from stevedore import enabled as sd_enabled
from stevedore import exception as sd_exception
from stevedore import named

from nova_ext import exception

LOG = logging.getLogger(__name__)


def _raise_load_failure(manager, entry_point, error):
    raise exception.PluginLoadFailed(manager.namespace, entry_point, error)


def _raise_switch_failure(manager, entry_point, error):
    # stevedore hands every error of loading and checking a plugin here,
    # nova_ext's own check's too, which already names the entry point.
    if isinstance(error, exception.NovaExtError):
        raise error
    _raise_load_failure(manager, entry_point, error)


def _check(namespace, name, obj, base):
    # Plugins may be classes (instantiated by the caller) or instances.
    cls = obj if isinstance(obj, type) else type(obj)
    if not issubclass(cls, base):
        raise exception.PluginTypeError(namespace, name, obj, base)
    return obj


def load_one(namespace, name, base):
    """Load the entry point ``name`` and return what it names.

    :raises NovaExtError: if it is missing, fails to import, or is not a
        ``base``.
    """
    try:
        manager = sd_driver.DriverManager(
            namespace, name,
            on_load_failure_callback=_raise_load_failure)
    except sd_exception.NoMatches:
        raise exception.PluginNotFound(namespace, [name])
    except sd_exception.MultipleMatches as e:
        raise exception.NovaExtError(
            'nova_ext: entry point %r is defined more than once in '
            'namespace %s: %s' % (name, namespace, e))
    return _check(namespace, name, manager.driver, base)


def load_many(namespace, names, base):
    """Load the entry points ``names``, in that order, and instantiate them.

    An entry point may name a ``base`` subclass, instantiated here with no
    arguments, or an instance of one.

    :returns: a list of ``(name, plugin instance)`` pairs; empty when
        ``names`` is empty, in which case nothing is imported.
    :raises NovaExtError: as :func:`load_one`, naming every missing entry
        point at once.
    """
    names = list(names)
    if not names:
        return []
    if len(set(names)) != len(names):
        raise exception.NovaExtError(
            'nova_ext: %s lists a plugin more than once: %s'
            % (namespace, ', '.join(names)))
    missing = set()
    manager = named.NamedExtensionManager(
        namespace, names, name_order=True,
        on_load_failure_callback=_raise_load_failure,
        on_missing_entrypoints_callback=missing.update)
    if missing:
        raise exception.PluginNotFound(namespace, missing)
    loaded = [(ext.name, _instance(_check(namespace, ext.name, ext.plugin,
                                          base)))
              for ext in manager.extensions]
    LOG.debug('Loaded %s plugins: %s', namespace, [n for n, _ in loaded])
    return loaded


def _instance(obj):
    return obj() if isinstance(obj, type) else obj


def available(namespace):
    """Names of every entry point installed in ``namespace``, sorted."""
    # Listing must not import plugin code: an operator asking what is
    # installed should not be told that a broken one failed to import.
    return sorted({ep.name
                   for ep in importlib.metadata.entry_points(group=namespace)})


class Switched(object):
    """A plugin that its capability's own option switches on.

    For the plugin kinds whose plugins each serve a capability (API
    handlers, notification consumers): a plugin of those is on when its
    :meth:`enabled` says so, or when it is named in its kind's list option
    (``[nova_ext_api]handlers``, ``[nova_ext_notifications]consumers``).
    """

    @classmethod
    def enabled(cls, conf):
        """Whether the capability this plugin serves is switched on.

        :param conf: ``nova_ext.conf.CONF``.
        :returns: False unless overridden: a plugin is off by default.
        """
        return False


def load_switched(namespace, base, conf, listed):
    """Load the plugins of ``namespace`` that are switched on.

    For kinds whose plugins are :class:`Switched`: a plugin is on when its
    ``enabled(conf)`` says so, or when it is named in ``listed``. Every
    installed plugin of the namespace is imported to ask it.

    :returns: ``[(name, plugin instance)]`` sorted by name.
    :raises NovaExtError: as :func:`load_one`, for any installed plugin
        (an error of its ``enabled(conf)`` too), and naming every entry
        point of ``listed`` that is not installed.
    """
    missing = set(listed) - set(available(namespace))
    if missing:
        raise exception.PluginNotFound(namespace, missing)

    def switched_on(ext):
        plugin = _check(namespace, ext.name, ext.plugin, base)
        return ext.name in listed or plugin.enabled(conf)

    manager = sd_enabled.EnabledExtensionManager(
        namespace, switched_on,
        on_load_failure_callback=_raise_switch_failure)
    by_name = collections.defaultdict(list)
    for ep in manager.list_entry_points():
        by_name[ep.name].append(ep.value)
    for name, values in sorted(by_name.items()):
        if len(values) > 1:
            raise exception.NovaExtError(
                'nova_ext: entry point %r is defined more than once in '
                'namespace %s: %s' % (name, namespace, ', '.join(values)))
    return [(ext.name, _instance(ext.plugin))
            for ext in sorted(manager.extensions, key=lambda e: e.name)]
