# Sourced by scripts that need a Python tool from PyPI: `venv_with NAME PACKAGE==VERSION`
# makes (once) a virtualenv at .build-venv/NAME (git-ignored) with that package and prints its
# path. Run from the repository's root.
venv_with() {
    local venv=.build-venv/$1
    if [ ! -f "$venv/.installed-$2" ]; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install --quiet --disable-pip-version-check "$2" >&2
        touch "$venv/.installed-$2"
    fi
    echo "$venv"
}
