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
"""``nova-ext-manage db online_data_migrations [--max-count N]`` and
``nova-ext-manage api_db sync|version``.

Runs the migrations enabled in ``[nova_ext_object_migrations] migrations``
in every cell, with nova-manage's batching: without ``--max-count``,
batches of 50 until a batch does nothing; with it, one batch of at most N
records per cell. Prints found/done per migration and cell, as a table or
(``--format json``) a JSON document.

Exit codes, nova-manage's: 0 complete, 1 work remains, 2 a migration
raised (the others still ran), 127 a bad ``--max-count``.
"""

import json
import sys

from oslo_log import log as logging

from nova_ext import object_migrations

LOG = logging.getLogger(__name__)

DEFAULT_BATCH = 50


def run_batch(cctx, migrations, max_count):
    """One batch in one cell, as Nova's ``_run_migration``.

    :returns: ``({name: (found, done)}, errors)``.
    """
    ran = 0
    results, errors = {}, []
    for name, migration in migrations:
        try:
            found, done = migration(cctx, max_count - ran)
        except Exception as e:
            LOG.exception('Error running online data migration %s', name)
            errors.append((name, e))
            found = done = 0
        results[name] = (found, done)
        ran += done
        # The batch size bounds the records written across migrations.
        if ran >= max_count:
            break
    return results, errors


def _remaining(cctx, migration):
    # Migrations that can count what is left say so exactly; for the
    # others, as nova-manage, work remains while a batch did anything.
    count = getattr(migration, 'remaining', None)
    return count(cctx) if count is not None else None


def run(ctx, conf, args, out=None, cells=None):
    from nova import context as nova_context
    from nova import objects

    out = out or sys.stdout
    as_json = getattr(args, 'format', 'table') == 'json'
    max_count = getattr(args, 'max_count', None)
    if max_count is not None and max_count < 1:
        print('Must supply a positive value for --max-count',
              file=sys.stderr if as_json else out)
        return 127
    migrations = object_migrations.load_migrations(conf)
    if not migrations:
        if as_json:
            _print_json(out, [], [], {}, {}, [])
        else:
            print('No migrations enabled in [nova_ext_object_migrations] '
                  'migrations.', file=out)
        return 0
    cells = cells if cells is not None else objects.CellMappingList.get_all(
        ctx)
    totals, errors, left, ran_last = {}, [], {}, 0
    for cell in cells:
        with nova_context.target_cell(ctx, cell) as cctx:
            while True:
                results, errs = run_batch(
                    cctx, migrations, max_count or DEFAULT_BATCH)
                errors += [(cell.identity, n, e) for n, e in errs]
                ran = 0
                for name, (found, done) in results.items():
                    f, d = totals.get((name, cell.identity), (0, 0))
                    totals[(name, cell.identity)] = (f + found, d + done)
                    ran += done
                if max_count is not None or not ran:
                    break
            ran_last += ran
            for name, migration in migrations:
                try:
                    left[(name, cell.identity)] = _remaining(cctx, migration)
                except Exception as e:
                    LOG.exception('Error counting what %s has left', name)
                    errors.append((cell.identity, name, e))
    if as_json:
        _print_json(out, migrations, cells, totals, left, errors)
    else:
        _print_table(out, migrations, cells, totals, left)
        for cell, name, e in errors:
            print('%s in %s failed: %s: %s' % (name, cell, type(e).__name__,
                                               e), file=out)
    if errors:
        return 2
    counted = [n for n in left.values() if n is not None]
    if len(counted) == len(left):
        return 1 if sum(counted) else 0
    return 1 if ran_last else 0


def _print_table(out, migrations, cells, totals, left):
    import prettytable

    table = prettytable.PrettyTable(
        ['Migration', 'Cell', 'Found', 'Done', 'Remaining'])
    for name, _ in migrations:
        for cell in cells:
            found, done = totals.get((name, cell.identity), (0, 0))
            rest = left.get((name, cell.identity))
            table.add_row([name, cell.identity, found, done,
                           '?' if rest is None else rest])
    print(table, file=out)


def _print_json(out, migrations, cells, totals, left, errors):
    """The table's rows, and the errors, as one JSON document."""
    rows = []
    for name, _ in migrations:
        for cell in cells:
            found, done = totals.get((name, cell.identity), (0, 0))
            rows.append({'migration': name, 'cell': cell.identity,
                         'found': found, 'done': done,
                         'remaining': left.get((name, cell.identity))})
    json.dump({'migrations': rows, 'errors': [
        {'migration': name, 'cell': cell,
         'error': '%s: %s' % (type(e).__name__, e)}
        for cell, name, e in errors]}, out, indent=2, sort_keys=True)
    out.write('\n')


def run_api_db(ctx, conf, args, out=None):
    """``api_db sync [--revision R]`` and ``api_db version``."""
    from nova_ext.cell0_rebuild import migration

    out = out or sys.stdout
    if args.command == 'sync':
        migration.db_sync(args.revision)
    current, head = migration.current(), migration.head()
    if getattr(args, 'format', 'table') == 'json':
        json.dump({'revision': current, 'head': head}, out, sort_keys=True)
        out.write('\n')
    else:
        print('%s (head %s)' % (current, head), file=out)
    return 0
