// SPDX-License-Identifier: GPL-2.0-only
/*
 * guest/common/cmdlang.c, the command language both executors share, as an object of this
 * module: the build copies guest/common beside this directory, and the Kbuild's include path
 * finds it (an object of its own keeps the shared file's statics to itself).
 */
#include "cmdlang.c"
