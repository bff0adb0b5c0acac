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
"""The ``nova-ext-manage index`` commands, callable without a CLI.

Each takes an admin context, the configuration and the parsed arguments,
prints its report and returns the exit code, so tests run them against a
live cloud exactly as an operator would.
"""

import json
import sys
import time

from oslo_db import exception as db_exc
from oslo_utils import timeutils

from nova_ext.cmd import manage
from nova_ext.index import db
from nova_ext.index.repair import sync
from nova_ext.index.repair import verify
from nova_ext.index.upkeep import migration
from nova_ext.index.upkeep import status


def run(ctx, conf, args, out=None):
    out = out or sys.stdout
    if args.command != 'db_sync':
        missing = _schema_missing(conf)
        if missing is not None:
            print('nova-ext-manage: %s: run "nova-ext-manage index '
                  'db_sync"' % missing, file=sys.stderr)
            return manage.ERROR
    return COMMANDS[args.command](ctx, conf, args, out)


def _schema_missing(conf):
    """Why the index cannot be read, if it has no schema; else None.

    Nothing is created: an SQLite index is never made by opening it.
    """
    try:
        revision = migration.current(conf)
    except db_exc.DBNonExistentDatabase:
        return 'the index database %s does not exist' % (
            status.masked(db.connection_url(conf)))
    if revision is None:
        return 'the index database has no schema'
    return None


def _cells(ctx, name):
    cells = sync.cells(ctx, name)
    if not cells:
        raise ValueError('no cell named %r' % name)
    return cells


def db_sync(ctx, conf, args, out):
    migration.db_sync(conf, args.revision)
    print('index schema at revision %s' % migration.current(conf), file=out)
    return 0


class Progress(object):
    """One line per cell, rewritten in place on a terminal."""

    def __init__(self, out, name, total):
        self.out, self.name, self.total = out, name, total
        self.done, self.started = 0, time.monotonic()
        self.tty = getattr(out, 'isatty', lambda: False)()

    def __call__(self, n):
        self.done += n
        if self.tty:
            self._print('\r')

    def _print(self, prefix):
        rate = self.done / max(time.monotonic() - self.started, 1e-6)
        pct = 100.0 * self.done / self.total if self.total else 100.0
        print('%s%s: %d/%d (%.0f%%) %.0f/s' % (
            prefix, self.name, self.done, self.total, pct, rate),
            end='' if prefix == '\r' else '\n', file=self.out, flush=True)

    def finish(self):
        self._print('\r' if self.tty else '')
        if self.tty:
            print('', file=self.out)


def do_sync(ctx, conf, args, out):
    since = timeutils.parse_isotime(args.since) if args.since else None
    if since is not None:
        since = timeutils.normalize_time(since)
    for cell in _cells(ctx, args.cell):
        total = sync.count_cell(ctx, cell, since=since)
        progress = Progress(out, cell.name or cell.uuid, total)
        totals = sync.sync_cell(ctx, conf, cell, restart=args.restart,
                                since=since, progress=progress)
        progress.finish()
        print('%s: %s' % (cell.name or cell.uuid, ', '.join(
            '%s %d' % kv for kv in sorted(totals.items()))), file=out)
    return 0


def do_verify(ctx, conf, args, out):
    reports = [verify.verify_cell(ctx, conf, cell, fix=args.fix)
               for cell in _cells(ctx, args.cell)]
    if args.format == 'json':
        print(json.dumps([r.as_dict() for r in reports], indent=2,
                         sort_keys=True), file=out)
    else:
        print('%-20s %9s %8s %6s %6s %6s' % ('cell', 'checked', 'missing',
                                             'stale', 'extra', 'fixed'),
              file=out)
        for r in reports:
            c = r.counts
            print('%-20s %9d %8d %6d %6d %6d' % (
                (r.cell_name or r.cell_uuid)[:20], c['checked'],
                c['missing'], c['stale'], c['extra'], c['fixed']), file=out)
    left = sum(r.drift for r in reports) - sum(r.counts['fixed']
                                               for r in reports)
    return 1 if left > 0 else 0


def do_status(ctx, conf, args, out):
    report = status.collect(ctx, conf)
    if args.format == 'json':
        print(json.dumps(report, indent=2, sort_keys=True, default=str),
              file=out)
    else:
        for line in status.lines(report):
            print(line, file=out)
    return 0 if report['healthy'] else 1


def do_purge(ctx, conf, args, out):
    print('purged %d tombstones' % verify.purge_tombstones(conf), file=out)
    return 0


COMMANDS = {
    'db_sync': db_sync,
    'sync': do_sync,
    'verify': do_verify,
    'status': do_status,
    'purge': do_purge,
}
