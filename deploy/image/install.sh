#!/usr/bin/env bash
# The image's install steps. The Dockerfile RUNs them and CI replays them
# (deploy/image/replay.py) in a fresh virtual environment, so the steps CI proves
# are the image's own.
#
#   install.sh torch     torch==$TORCH_VERSION from $TORCH_INDEX_URL (the replay
#                        leaves TORCH_VERSION empty: it has only the machine's torch)
#   install.sh app SRC   convt-serve from SRC (not editable), then its CPU and CUDA
#                        kernels for $TORCH_CUDA_ARCH_LIST and its JSON extension
#                        (service/native) into $CONVT_BUILD_DIR
set -euo pipefail

case "${1:-}" in
  torch)
    if [[ -n "${TORCH_VERSION:-}" ]]; then
      python -m pip install --no-cache-dir "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX_URL:?}"
    else
      echo "install.sh: TORCH_VERSION is empty: torch comes with the app's requirements"
    fi
    ;;
  app)
    src=$(cd "${2:?usage: install.sh app SRC}" && pwd)
    : "${CONVT_BUILD_DIR:?}" "${TORCH_CUDA_ARCH_LIST:?}"
    python -m pip install --no-cache-dir "$src"
    # From outside SRC, so that the installed package (what the image runs) is the one built.
    cd /
    CONVT_REQUIRE_CUDA=1 python -m kernels build
    python -m service.native  # the JSON number extension, into the same directory
    ;;
  *)
    echo "usage: install.sh torch | install.sh app SRC" >&2
    exit 2
    ;;
esac
