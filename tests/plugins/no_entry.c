/* SPDX-License-Identifier: Apache-2.0 */
/* tests/plugins/no_entry.c: a shared object without the tandem entry point. */
int not_a_tandem_plugin(void) { return 42; }
