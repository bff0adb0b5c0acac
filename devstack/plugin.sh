#!/bin/bash
#
# devstack/plugin.sh
# DevStack plugin of nova_ext: installs it into Nova's Python environment
# and attaches it to Nova. See devstack/README.rst.
#
# Sourced by stack.sh, unstack.sh and clean.sh as
#   source devstack/plugin.sh <mode> [<phase>]

# Save trace setting
_XTRACE_NOVA_EXT_PLUGIN=$(set +o | grep xtrace)
set -o xtrace

# This plugin's own lib, wherever the plugin was cloned.
# shellcheck source=devstack/lib/nova_ext
source "$(dirname "${BASH_SOURCE[0]}")/lib/nova_ext"

if is_service_enabled nova-ext; then

    if [[ "$1" == "stack" && "$2" == "install" ]]; then
        # Nova is installed: add nova_ext to its environment.
        echo_summary "Installing nova_ext"
        install_nova_ext

    elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
        # Nova's config files are written and Nova is not started yet.
        # configure_nova_ext first waits for stack.sh's background job that
        # edits them too (configure_neutron_nova).
        echo_summary "Attaching nova_ext to Nova"
        configure_nova_ext
        # init_nova has made Nova's API database: add nova_ext's tables to
        # it (rebuild from cell0) before nova-api starts. Idempotent.
        # nova-ext-manage is in $NOVA_BIN_DIR, with Nova's commands.
        if is_service_enabled n-api; then
            _nova_ext_manage --config-file "$NOVA_CONF" api_db sync || \
                die $LINENO "nova_ext: could not create nova_ext's tables in Nova's API database"
        fi
        if [[ "$NOVA_EXT_CELL0_REBUILD" == "True" ]]; then
            # Read by nova-api, from $NOVA_CONF.
            iniset "$NOVA_CONF" nova_ext_cell0_rebuild enabled True
            # Its records are purged by this online data migration (run by
            # nova-ext-manage db online_data_migrations), unless the
            # operator chose the migrations explicitly.
            if [[ -z "$NOVA_EXT_OBJECT_MIGRATIONS" ]]; then
                iniset "$NOVA_CONF" nova_ext_object_migrations migrations build-capture-purge
            fi
        fi

    elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
        # Nova is running.
        reconcile_nova_ext
        init_nova_ext_index
        # nova-ext-indexer (n-ext-idx) and nova-ext-status-watcher
        # (n-ext-watch), when enabled (devstack/settings).
        start_nova_ext_services
        if [[ "$NOVA_EXT_VERIFY" == "True" ]]; then
            echo_summary "Verifying that nova_ext is attached to Nova"
            verify_nova_ext
        fi
    fi

    if [[ "$1" == "unstack" ]]; then
        # Everything else of nova_ext runs inside Nova's processes, which
        # unstack.sh stops.
        stop_nova_ext_services
    fi

    if [[ "$1" == "clean" ]]; then
        cleanup_nova_ext
    fi
fi

# Restore xtrace
$_XTRACE_NOVA_EXT_PLUGIN
