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
"""``nova.api.validation.validators._SchemaValidator``, its class made once.

Nova's API checks a request's query and body with a ``_SchemaValidator``
made for each check, whose ``__init__`` makes a new jsonschema validator
class every time (``jsonschema.validators.extend``, with Nova's own
``minimum`` and ``maximum``, and a relaxed ``additionalProperties`` for a
query). For a server list, whose controller nova_ext runs on every list
it renders (``instance_list.render.controller``), making those classes is
most of the controller's CPU.

Within :func:`reusing`, the module attribute's class (installed by
:func:`attach`) makes each validator from a class of its kind made once,
the same class Nova's ``__init__`` would make again; each check still
has its own validator, of its schema, with Nova's format checker, and
answers as Nova's. Outside, and in any thread not within it, it is
Nova's ``__init__`` itself: Nova's own requests are checked as Nova
checks them.

The contract test is
``nova_ext.tests.unit.seams.test_internals_schema_validator``.
"""

import contextlib
import threading

import jsonschema
from nova.api.validation import validators as nova_validators
from oslo_log import log as logging

from nova_ext.seams import internals

LOG = logging.getLogger(__name__)
POINT = 'nova.api.validation.validators._SchemaValidator'

_LOCK = threading.Lock()
_ACTIVE = threading.local()
#: Nova's class, while :func:`attach` has the module attribute replaced.
_NOVAS = None


def _reusing_class(novas):
    """A subclass of Nova's ``novas`` that reuses its validator classes."""

    class ReusingSchemaValidator(novas):
        #: {relax_additional_properties: jsonschema validator class}.
        _classes = {}

        def __init__(self, schema, relax_additional_properties=False,
                     is_body=True):
            if not getattr(_ACTIVE, 'on', False):
                super().__init__(schema, relax_additional_properties,
                                 is_body)
                return
            # What Nova's __init__ sets, of the class it would make.
            self.is_body = is_body
            made = self._classes.get(relax_additional_properties)
            if made is None:
                made = self._classes[relax_additional_properties] = (
                    self._extended(relax_additional_properties))
            self.validator = made(
                schema, format_checker=nova_validators._FORMAT_CHECKER)

        def _extended(self, relax_additional_properties):
            # Nova's minimum and maximum read nothing of the instance but
            # its class's: they may be bound to the first one.
            checks = {'minimum': self._validate_minimum,
                      'maximum': self._validate_maximum}
            if relax_additional_properties:
                checks['additionalProperties'] = (
                    nova_validators._soft_validate_additional_properties)
            return jsonschema.validators.extend(self.validator_org, checks)

    return ReusingSchemaValidator


def attach():
    """Install the reusing class in Nova's module (idempotent).

    :returns: whether it is installed; not on a Nova nova_ext was not
        tested with (logged), whose checks then make their classes.
    """
    global _NOVAS
    if not internals.tested(POINT, LOG, 'server lists are checked without '
                            'reusing schema validator classes'):
        return False
    with _LOCK:
        if _NOVAS is None:
            _NOVAS = nova_validators._SchemaValidator
            nova_validators._SchemaValidator = _reusing_class(_NOVAS)
    return True


def detach():
    """Put Nova's class back (tests)."""
    global _NOVAS
    with _LOCK:
        if _NOVAS is not None:
            nova_validators._SchemaValidator = _NOVAS
            _NOVAS = None


@contextlib.contextmanager
def reusing():
    """Within, this thread's schema checks reuse their classes."""
    was = getattr(_ACTIVE, 'on', False)
    _ACTIVE.on = True
    try:
        yield
    finally:
        _ACTIVE.on = was
