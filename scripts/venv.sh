# Sourced by scripts that need Python tools from PyPI: `venv_with NAME PACKAGE==VERSION...`
# makes (once) a virtualenv at .build-venv/NAME (git-ignored) with those packages and prints
# its path. Run from the repository's root.
venv_with() {
    local venv=.build-venv/$1
    shift
    local marker
    marker="$venv/.installed-$(echo "$*" | tr ' /' '__')"
    if [ ! -f "$marker" ]; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install --quiet --disable-pip-version-check "$@" >&2
        touch "$marker"
    fi
    echo "$venv"
}
