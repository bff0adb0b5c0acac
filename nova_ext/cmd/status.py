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
"""nova-ext-status: is this cloud ready for, and healthy with, nova_ext?

``nova-ext-status [--config-file nova.conf] upgrade check [--json]`` runs
the checks below like ``nova-status upgrade check`` does (oslo.upgradecheck):
exit 0 when all pass, 1 on a warning, 2 on a failure, with a table of
results, or with ``--json`` one JSON document, on stdout; logs go to stderr
unless nova.conf sends them elsewhere. (Exit 255, with the traceback on
stdout, is oslo.upgradecheck's answer to a check that raised.)
``nova-ext-status --version`` prints nova_ext's version.
"""

import sys

from oslo_config import cfg
from oslo_log import log as logging
from oslo_upgradecheck import upgradecheck

from nova_ext.cmd import common
# Registers nova_ext's option groups on Nova's configuration.
from nova_ext import conf as ext_conf  # noqa: F401
from nova_ext.index.upkeep import rules
from nova_ext.index.upkeep import status as index_status


class Checks(upgradecheck.UpgradeCommands):
    """The nova_ext checks; each capability adds its own."""

    def __init__(self, conf=None, ctx=None):
        super().__init__()
        self.conf = conf
        self.ctx = ctx

    def _context(self):
        from nova import context as nova_context

        return self.ctx or nova_context.get_admin_context()

    def _check_instance_index(self):
        conf = self.conf
        code = upgradecheck.Code
        if conf.nova_ext_instance_list.driver != 'index':
            return upgradecheck.Result(
                code.SUCCESS, 'The index driver is not enabled.')
        try:
            report = index_status.collect(self._context(), conf)
        except Exception as e:
            return upgradecheck.Result(
                code.FAILURE, 'The index database cannot be read (%s: %s); '
                'nova-api lists from every cell instead.'
                % (type(e).__name__, e))
        problem = rules.schema(report['revision'], report['head'],
                               report['known'])
        if problem:
            return upgradecheck.Result(
                code.FAILURE, '%s%s.' % (problem[0].upper(), problem[1:]))
        unsynced = [c['name'] or c['cell_uuid'] for c in report['cells']
                    if not c['synced_at']]
        if unsynced:
            return upgradecheck.Result(
                code.WARNING, 'Cells never synced into the index: %s. Run '
                '"nova-ext-manage index sync".' % ', '.join(unsynced))
        if not report['healthy']:
            return upgradecheck.Result(
                code.WARNING, '%s.%s' % ('; '.join(report['reasons']),
                                         ''.join(_hints(report))))
        served = sum(r['counts'].get('served', 0) for r in report['api'])
        handed = sum(r['counts'].get(k, 0) for r in report['api']
                     for k in ('unservable', 'unavailable', 'failed',
                               'latched'))
        return upgradecheck.Result(
            code.SUCCESS, '%s; %d marks pending (catch_up_limit %d); %d '
            'instances in %d cells; nova-api served %d lists from the '
            'index, handed %d to Nova.' % (
                index_status.LISTS, report['pending'],
                report['catch_up_limit'],
                sum(c['instances'] for c in report['cells']),
                len(report['cells']), served, handed))

    def _check_compute_ids(self):
        # Nova's own migration can stall on unlinkable rows; what matters
        # is whether anything that can be linked is still NULL.
        from nova import context as nova_context
        from nova import objects

        from nova_ext.cmd import compute_ids

        code = upgradecheck.Code
        ctx = self._context()
        left = {}
        try:
            for cell in objects.CellMappingList.get_all(ctx):
                with nova_context.target_cell(ctx, cell) as cctx:
                    for name, n in compute_ids.linkable_left(cctx).items():
                        if n:
                            left['%s in %s' % (name, cell.identity)] = n
        except Exception as e:
            return upgradecheck.Result(
                code.FAILURE, 'Compute id linkage cannot be read (%s: %s).'
                % (type(e).__name__, e))
        if left:
            return upgradecheck.Result(
                code.FAILURE, 'Records not linked to their compute object '
                'but linkable: %s. Enable them in [nova_ext_object_'
                'migrations] migrations and run "nova-ext-manage db '
                'online_data_migrations"; "nova-ext-manage compute-ids '
                'audit" lists the rest.' % ', '.join(
                    '%s: %d' % kv for kv in sorted(left.items())))
        return upgradecheck.Result(
            code.SUCCESS, 'Every linkable record is linked to its compute '
            'object.')

    def _check_cell0_rebuild(self):
        from nova_ext.cell0_rebuild import migration

        code = upgradecheck.Code
        if not self.conf.nova_ext_cell0_rebuild.enabled:
            return upgradecheck.Result(
                code.SUCCESS, 'Rebuild from cell0 is not enabled.')
        try:
            current = migration.current()
        except Exception as e:
            return upgradecheck.Result(
                code.FAILURE, "nova_ext's tables in the API database cannot "
                'be read (%s: %s).' % (type(e).__name__, e))
        if current != migration.head():
            # Without the table nova-api records nothing at create time
            # and every rebuild from cell0 gets a 409.
            return upgradecheck.Result(
                code.FAILURE, "nova_ext's tables in the API database are at "
                '%s, not %s: run "nova-ext-manage api_db sync".'
                % (current, migration.head()))
        if 'build-capture-purge' not in (
                self.conf.nova_ext_object_migrations.migrations):
            return upgradecheck.Result(
                code.WARNING, 'build-capture-purge is not in [nova_ext_'
                'object_migrations] migrations: the records of servers '
                'created are kept until they are deleted through the API.')
        return upgradecheck.Result(
            code.SUCCESS, 'Rebuild from cell0 is enabled and its table is '
            'current.')

    _upgrade_checks = (
        ('Instance index', _check_instance_index),
        ('Compute object ids', _check_compute_ids),
        ('Rebuild from cell0', _check_cell0_rebuild),
    )


def _hints(report):
    if rules.pending(report['pending'], report['catch_up_limit']):
        yield ' Is the indexer (or an in-process index worker) running?'
    if any(r['current'] and r['answers_from_nova'] for r in report['api']):
        yield ' Can those nova-api processes write the index?'


def main(argv=None):
    from nova import config
    from nova import objects

    argv = sys.argv if argv is None else argv
    common.exit_on_version('nova-ext-status', argv[1:])
    checks = Checks(config.CONF)
    upgradecheck.register_cli_options(config.CONF, checks)
    # Nova's configuration path, as nova-status: the API database and cell
    # mappings are read, nothing is sent on the message bus.
    try:
        common.parse_args(argv)
    except cfg.Error as e:
        return common.config_error('nova-ext-status', e, code=255)
    # The results are the command's output on stdout (a table, or JSON for
    # a machine to parse): logs go to stderr.
    config.CONF.set_default('use_stderr', True)
    logging.setup(config.CONF, 'nova-ext-status')
    objects.register_all()
    # UpgradeCommands.check reads --json from oslo.upgradecheck's own CONF,
    # which only its main() sets; that main() would bypass Nova's parsing.
    upgradecheck.CONF = config.CONF
    return upgradecheck.run(config.CONF)
