#!/usr/bin/env bash
# Installs what jx needs to build and test on Debian 12, from Debian's registry.
# Idempotent: packages already present are not fetched again.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libopenblas-dev libopenblas0-pthread liblapacke-dev   # BLAS/LAPACK (see README: why OpenBLAS)
  libdnnl2                                              # oneDNN: float32 GEMMs up to 512 (README: BLAS choice)
  zlib1g-dev                                            # .npz archives
  libhwy-dev                                            # Highway's vqsort (sort kernels)
  libgtest-dev                                          # the test suite
  python3 python3-venv                                  # fixture and benchmark scripts
  llvm-19-dev                                           # jit: native code through LLVM ORC
  libopenmpi-dev openmpi-bin                            # pmap across processes (collectives over MPI)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "jx: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
