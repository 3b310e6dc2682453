# Sourced by tests/scripts/install-*.sh: installs pinned PyPI packages into a
# directory of their own under $KPROF_DEPS_DIR with `pip install --target`.
# Nothing goes into the system Python; the tests put the directory on PYTHONPATH.
# Idempotent: <dir>/.kprof-installed records what was installed.
#
#   pip_target NAME "MODULE[, MODULE...]" SPEC...
#     NAME: the directory under $KPROF_DEPS_DIR and the name in messages;
#     MODULE: what must import from it afterwards; SPEC: pinned requirements.

pip_target() {
    local name=$1 modules=$2
    shift 2
    local specs=("$@")
    local root deps dir
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    deps=${KPROF_DEPS_DIR:-$root/target/deps}
    case $deps in
        /*) ;;
        *) deps=$root/$deps ;;
    esac
    dir=$deps/$name
    if [[ -f $dir/.kprof-installed && $(cat "$dir/.kprof-installed") == "${specs[*]}" ]]; then
        echo "install-$name: ${specs[*]} already in $dir" >&2
        return 0
    fi
    echo "install-$name: installing ${specs[*]} into $dir" >&2
    rm -rf "$dir"
    mkdir -p "$dir"
    if ! python3 -m pip install --quiet --disable-pip-version-check --target "$dir" "${specs[@]}" >&2; then
        rm -rf "$dir"
        echo "install-$name: error: pip could not install ${specs[*]}" >&2
        return 1
    fi
    PYTHONPATH=$dir python3 -c "import $modules" \
        || { echo "install-$name: error: $modules does not import from $dir" >&2; return 1; }
    echo "${specs[*]}" >"$dir/.kprof-installed"
}
