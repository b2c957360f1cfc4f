/* SPDX-License-Identifier: MIT */
#ifndef RS_VERSION_H
#define RS_VERSION_H

#define RS_VERSION "0.1.0"

#endif /* RS_VERSION_H */
