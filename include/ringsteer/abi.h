/* SPDX-License-Identifier: MIT */
/*
 * The one ABI between the BPF programs and userspace: map keys, map values
 * and limits. Both sides include this file or the themed header they use
 * (abi_base.h: limits and ids; abi_maps.h: the steering maps; abi_fleet.h:
 * fleet mode; abi_trace.h: tracing and self-tests); nothing here may be
 * duplicated. Every struct is fixed-size with explicit padding so that the
 * BTF the compiler emits is what `bpftool map dump` shows.
 */
#ifndef RINGSTEER_ABI_H
#define RINGSTEER_ABI_H

/*
 * Every change of what a pinned value means (a size, an offset, a flag, a
 * limit) is a new ABI: tests/unit/abi/test_abi.c fails until the new
 * layout is recorded (docs/architecture.md "The ABI").
 */
#define RS_ABI_VERSION 12

#include "abi_base.h"
#include "abi_maps.h"
#include "abi_fleet.h"
#include "abi_trace.h"

#endif /* RINGSTEER_ABI_H */
