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
Loading goes through the two helpers here so that every kind fails the same
way: a missing name, an entry point that does not import, or an object of
the wrong kind raises a :class:`nova_ext.exception.NovaExtError` naming
the namespace and the entry point, at start-up, instead of a capability
silently doing nothing.
"""

import importlib.metadata

from oslo_log import log as logging
from stevedore import driver as sd_driver
from stevedore import exception as sd_exception
from stevedore import named

from nova_ext import exception

LOG = logging.getLogger(__name__)


def _raise_load_failure(manager, entry_point, error):
    raise exception.PluginLoadFailed(manager.namespace, entry_point, error)


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


def load_switched(namespace, base, conf, listed):
    """Load the plugins of ``namespace`` that are switched on.

    For kinds whose plugins belong to a capability (API handlers,
    notification consumers): a plugin is on when its ``enabled(conf)`` says
    so, or when it is named in ``listed``. Every installed plugin of the
    namespace is imported to ask it.

    :returns: ``[(name, plugin instance)]`` sorted by name.
    """
    installed = available(namespace)
    missing = set(listed) - set(installed)
    if missing:
        raise exception.PluginNotFound(namespace, missing)
    switched = []
    for name in installed:
        plugin = load_one(namespace, name, base)
        if name in listed or plugin.enabled(conf):
            switched.append((name, _instance(plugin)))
    return switched
