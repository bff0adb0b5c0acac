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

"""nova_ext's own errors.

They are raised at start-up, where a clear message naming the option and the
entry point is what an operator needs; nothing here is ever turned into an
API response.
"""


class NovaExtError(Exception):
    """Base class for every nova_ext error."""


class PluginNotFound(NovaExtError):
    def __init__(self, namespace, names):
        self.namespace = namespace
        self.names = sorted(names)
        super().__init__(
            'nova_ext: no entry point named %s in namespace %s; is the '
            'package that provides it installed in this environment?'
            % (', '.join(repr(n) for n in self.names), namespace))


class PluginLoadFailed(NovaExtError):
    def __init__(self, namespace, entry_point, error):
        self.namespace = namespace
        self.entry_point = entry_point
        self.error = error
        super().__init__(
            'nova_ext: entry point %r (%s) in namespace %s failed to load: '
            '%s: %s' % (entry_point.name, entry_point.value, namespace,
                        type(error).__name__, error))


class PluginTypeError(NovaExtError):
    def __init__(self, namespace, name, obj, expected):
        super().__init__(
            'nova_ext: entry point %r in namespace %s gave %r, which is not '
            'a %s' % (name, namespace, obj, expected.__name__))


class UnsupportedNovaVersion(NovaExtError):
    def __init__(self, point, found, tested):
        self.point = point
        super().__init__(
            'nova_ext: %s was tested with nova %s; this is nova %s. It is '
            'not attached. Upgrade nova_ext to a release that lists this '
            'nova version.' % (point, tested, found))
