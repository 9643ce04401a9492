#!/bin/bash
# One command from a fresh Debian 12 machine to every test passed: install the
# packages, build with AddressSanitizer and UBSan and -Werror, run ctest
# (unit and integration tests; integration tests need root for FUSE allow_other,
# users and network namespaces).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
cmake -S . -B build-test -DCMAKE_BUILD_TYPE=Debug -DPARSA_SANITIZE=ON -DPARSA_WERROR=ON >/dev/null
cmake --build build-test -j"$(nproc)"
# The optimised build the NFS random checker (t0210) runs against (under
# ASan each large NFS reply costs a fresh mmap and its page faults, 3x slower),
# and the listing-memory test (t0045: the sanitizers' allocators keep freed
# memory on purpose).
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target parsafs parsa-sched fscheck make-history
export PARSA_FAST_BIN=$PWD/build/bin
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd build-test
ctest --output-on-failure -j2 --timeout 600 "$@"
