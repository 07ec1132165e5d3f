#!/usr/bin/env bash
# Set up the project's virtual environment from nothing: ./scripts/setup_env.sh [VENV_DIR]
#
# torch: on a machine without an NVIDIA GPU this installs PyTorch's CPU build (small), trying
# PyTorch's CPU wheel index first, then torch==2.13.0 from the default index resolved together with
# triton==3.9.0 (a local wheel folder or a mirror may hold the CPU build; PyPI's own 2.13.0 is a CUDA
# build pinned to Triton 3.7, which cannot be installed beside ours), and last torch 2.15.0 from there.
# On a machine with an NVIDIA GPU (or with GLUON_OVERLAP_TORCH=cuda) it installs the CUDA
# build of torch 2.15.0, the first CUDA release whose Triton pin (~=3.9.0) agrees with ours.
# GLUON_OVERLAP_TORCH=cpu forces the CPU build.
set -euo pipefail

VENV=${1:-.venv}
PYTHON=${PYTHON:-python3}
TORCH_CPU_VERSION=2.13.0
TORCH_CUDA_VERSION=2.15.0
TRITON_VERSION=3.9.0  # pyproject.toml's pin (tests/project/test_environment.py checks they agree)
TORCH_CPU_INDEX=${TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}

say() { printf '[setup] %s\n' "$*"; }

# pip reads its index and proxy from the environment (PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, HTTPS_PROXY,
# PIP_CERT); when it cannot reach an index, say so in one place instead of leaving only pip's traceback
index_help() {
    echo "[setup] pip could not install the packages (its error is above: no network, a package index it cannot" >&2
    echo "[setup] reach, or an index without torch==$TORCH_CPU_VERSION+cpu or torch==$TORCH_CUDA_VERSION beside triton==$TRITON_VERSION)." >&2
    echo "[setup]   behind a proxy:      HTTPS_PROXY=http://proxy:port make setup" >&2
    echo "[setup]   a company mirror:    PIP_INDEX_URL=https://mirror/simple make setup  (it must serve triton==$TRITON_VERSION and torch)" >&2
    echo "[setup]   its own certificate: PIP_CERT=/path/to/ca.pem make setup" >&2
    echo "[setup]   offline:             download the wheels on a connected machine (README.md: 'An offline machine')," >&2
    echo "[setup]                        copy them over, then PIP_NO_INDEX=1 PIP_FIND_LINKS=\$PWD/wheels make setup" >&2
    exit 1
}

# " (pip's last ERROR line)" from a log of a pip run whose output was kept, not shown; nothing when it has none
last_error() {
    local line
    line=$(grep -E '^ERROR' "$1" | grep -v 'ResolutionImpossible: for help' | tail -n 1 | cut -c 1-160)
    [ -n "$line" ] && printf ' (%s)' "$line"
    return 0
}

"$PYTHON" - <<'PY' || { echo "[setup] Python >= 3.10 is required (found $($PYTHON --version 2>&1))" >&2; exit 1; }
import sys
sys.exit(0 if sys.version_info >= (3, 10) else 1)
PY

if [ ! -x "$VENV/bin/python" ]; then
    say "creating $VENV with $($PYTHON --version 2>&1)"
    "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)
"${PIP[@]}" install --quiet --upgrade pip || say "could not upgrade pip; going on with $("${PIP[@]}" --version)"

want=${GLUON_OVERLAP_TORCH:-auto}
if [ "$want" = auto ]; then
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then want=cuda; else want=cpu; fi
fi

if "$VENV/bin/python" -c "import torch" >/dev/null 2>&1; then
    say "torch already installed: $("$VENV/bin/python" -c 'import torch; print(torch.__version__)')"
elif [ "$want" = cuda ]; then
    say "NVIDIA GPU found: installing the CUDA build of torch==$TORCH_CUDA_VERSION"
    "${PIP[@]}" install "torch==$TORCH_CUDA_VERSION" "triton==$TRITON_VERSION" || index_help
else
    say "no NVIDIA GPU: installing the CPU build of torch==$TORCH_CPU_VERSION"
    # pip's own errors of this first try are kept in a log, not shown: the fallback below is the normal path where
    # the CPU index cannot be reached (or lacks one of torch's dependencies), and its last error line is said
    cpu_log=$(mktemp)
    if ! "${PIP[@]}" install --timeout 20 --retries 1 --index-url "$TORCH_CPU_INDEX" "torch==$TORCH_CPU_VERSION" \
            >"$cpu_log" 2>&1; then
        say "PyTorch's CPU index did not serve torch==$TORCH_CPU_VERSION$(last_error "$cpu_log"); trying the default index"
        # resolved together with our Triton: a CPU build there (a local wheel folder, a mirror) is taken; PyPI's own
        # torch==2.13.0 is a CUDA build pinned to triton 3.7.1, which pip refuses once it has read the wheel's metadata.
        # pip's output is shown (a download takes a while) and kept for the one-line reason
        if ! "${PIP[@]}" install "torch==$TORCH_CPU_VERSION" "triton==$TRITON_VERSION" 2>&1 | tee "$cpu_log"; then
            say "the default index has no torch==$TORCH_CPU_VERSION that agrees with triton==$TRITON_VERSION$(last_error "$cpu_log")"
            say "installing torch==$TORCH_CUDA_VERSION from it instead: a CUDA build (about 3 GB more) that runs on the CPU too"
            "${PIP[@]}" install "torch==$TORCH_CUDA_VERSION" "triton==$TRITON_VERSION" || index_help
        fi
    fi
    rm -f "$cpu_log"
fi

say "installing gluon-overlap with its test extra (and Voila for \`make explorer\`)"
# setuptools says "Editable installation. Please be careful with folders ... with the same name as your package"
# on every editable install (pip >= 25 shows a build backend's warnings even with --quiet): the folder it means is
# this package itself, so the notice is silenced for this one command
PYTHONWARNINGS="ignore:Editable installation" "${PIP[@]}" install --quiet -e ".[test]" || index_help
# pip leaves setuptools' metadata folder in the checkout (the installed copy is in $VENV): remove the leftover,
# which JupyterLab's file browser would show at the top level
rm -rf gluon_overlap.egg-info
# JupyterLab's first start asks whether to fetch Jupyter's news, a pop-up that covers the explorer: answer it
# once for this environment ("never"; no update checks either), as JupyterLab's settings overrides
mkdir -p "$VENV/share/jupyter/lab/settings"
cat > "$VENV/share/jupyter/lab/settings/overrides.json" <<'JSON'
{
  "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false}
}
JSON
say "done: $("$VENV/bin/python" -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)')"
