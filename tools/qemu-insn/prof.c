/* Instruction profile for qemu-user (TCG plugin API version 1, qemu 7.2): counts the
 * guest instructions executed in each translated block and writes "ADDRESS COUNT" lines
 * (hex guest address of the block, instructions executed there), to map to functions
 * with `go tool addr2line` (prof.sh does both). Build:
 *   gcc -shared -fPIC -O2 -o libprof.so prof.c
 * Run: PROF_OUT=FILE qemu-aarch64 -plugin ./libprof.so PROGRAM ARGS... */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
extern void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
extern size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
extern uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
extern void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op, void *ptr, uint64_t imm);
extern void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
__attribute__((visibility("default"))) int qemu_plugin_version = 1;
/* One counter per translation (a block translated twice gets two; prof.sh sums them). */
struct block { uint64_t vaddr, count; struct block *next; };
static struct block *blocks;
static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  struct block *b = calloc(1, sizeof *b);
  b->vaddr = qemu_plugin_tb_vaddr(tb);
  b->next = blocks;
  blocks = b;
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->count, qemu_plugin_tb_n_insns(tb));
}
static void at_exit(qemu_plugin_id_t id, void *u) {
  const char *f = getenv("PROF_OUT");
  FILE *o = f ? fopen(f, "w") : stderr;
  for (struct block *b = blocks; b; b = b->next)
    if (b->count) fprintf(o, "0x%llx %llu\n", (unsigned long long)b->vaddr, (unsigned long long)b->count);
  if (f) fclose(o);
}
__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
  qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
  qemu_plugin_register_atexit_cb(id, at_exit, NULL);
  return 0;
}
