#!/bin/bash
# SPDX-License-Identifier: MIT
# A hash of the work tree as the package builds copy it (tracked and new
# files, their names and contents): build-in-root.sh stamps its packages
# with it, so vmtest-systemd.sh can tell a package of this very tree.
set -euo pipefail
cd "$(dirname "$0")/.."
git ls-files -co --exclude-standard -z | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-32
