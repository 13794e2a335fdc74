// SPDX-License-Identifier: GPL-2.0-only
/* guest/common/names.c, the names both executors trace, as an object of this module. */
#include "names.c"
