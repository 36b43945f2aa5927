/*
 * verbs_lent: a registered region's bytes are the application's memory, lent to the transport,
 * not mirrored. Two RC QPs of one process at the device's own GID (their frames loop back in
 * the library, through the same responder a remote peer reaches):
 * - registering 1 GiB of untouched memory costs no resident memory (no mirror), and a 64 KiB
 *   WRITE into its middle adds about 64 KiB and lands in the application's own pages;
 * - ibv_rereg_mr moves a region to other memory under the same struct ibv_mr (a WRITE to its
 *   new keys lands there) and refuses bad input or memory, the region then kept as it was;
 * - a region deregistered while WRITEs stream into it (after the first of them completed) is
 *   never touched after ibv_dereg_mr returns: its pages are made inaccessible (mprotect
 *   PROT_NONE) at once, so a late write by
 *   the library would kill the process; the WRITEs posted after it fail with a remote access
 *   error and every WRITE completes.
 * One line per check; exit 0 only if every check holds. Build: cc verbs_lent.c -libverbs.
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "verbs_pair.h"

#define GIB ((size_t)1 << 30)
#define CHUNK (64 * 1024)
#define STREAM 32

/* Resident bytes of this process (/proc/self/statm), or 0. */
static size_t resident(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long size = 0, pages = 0;
	if (!f)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &pages) != 2)
		pages = 0;
	fclose(f);
	return pages * (size_t)sysconf(_SC_PAGESIZE);
}

int main(void)
{
	int n;
	struct ibv_device **list = ibv_get_device_list(&n);
	struct ibv_context *ctx = list && n == 1 ? ibv_open_device(list[0]) : NULL;
	ibv_free_device_list(list);
	check("ibv_open_device", ctx != NULL);
	if (!ctx)
		return 1;
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq_a = ibv_create_cq(ctx, 2 * STREAM, NULL, NULL, 0);
	struct ibv_cq *cq_b = ibv_create_cq(ctx, 2 * STREAM, NULL, NULL, 0);
	struct ibv_qp_init_attr init = { .qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 2 * STREAM,
		.max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 } };
	init.send_cq = init.recv_cq = cq_a;
	struct ibv_qp *a = pd ? ibv_create_qp(pd, &init) : NULL;
	init.send_cq = init.recv_cq = cq_b;
	struct ibv_qp *b = pd ? ibv_create_qp(pd, &init) : NULL;
	union ibv_gid gid;
	check("a PD, two CQs, two QPs, our GID",
	      pd && cq_a && cq_b && a && b && ibv_query_gid(ctx, 1, 1, &gid) == 0);
	if (!pd || !cq_a || !cq_b || !a || !b)
		return 1;
	check("each QP to RTS with the other at our own GID",
	      to_rts(a, b->qp_num, gid, 1) == 0 && to_rts(b, a->qp_num, gid, 1) == 0);
	int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	unsigned char *src = malloc(CHUNK);
	memset(src, 0x5a, CHUNK);
	struct ibv_mr *src_mr = ibv_reg_mr(pd, src, CHUNK, rw);
	check("the source region", src_mr != NULL);
	if (!src_mr)
		return 1;

	/* 1 GiB registered costs nothing resident; a WRITE into it lands in our pages. */
	unsigned char *big = mmap(NULL, GIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t before = resident();
	struct ibv_mr *big_mr = big == MAP_FAILED ? NULL : ibv_reg_mr(pd, big, GIB, rw);
	size_t registered = resident();
	check("1 GiB of untouched memory registers", big_mr != NULL);
	if (!big_mr)
		return 1;
	printf("resident: %zu KiB before, %zu KiB with 1 GiB registered\n", before >> 10, registered >> 10);
	check("registering 1 GiB adds less than 16 MiB resident (no mirror)",
	      registered < before + ((size_t)16 << 20));
	struct ibv_mr middle = *big_mr;
	middle.addr = (char *)big_mr->addr + GIB / 2;
	check("post a 64 KiB WRITE into the middle",
	      post(a, IBV_WR_RDMA_WRITE, 1, src_mr, src, CHUNK, &middle, 0, 0) == 0);
	struct ibv_wc wc = poll_one(cq_a);
	check("the WRITE completes", wc.status == IBV_WC_SUCCESS && wc.wr_id == 1);
	check("its bytes are in the application's pages", filled(big + GIB / 2, CHUNK, 0x5a) &&
	      big[GIB / 2 - 1] == 0 && big[GIB / 2 + CHUNK] == 0);
	size_t written = resident();
	printf("resident: %zu KiB after the WRITE\n", written >> 10);
	check("the WRITE adds less than 16 MiB resident",
	      written < registered + ((size_t)16 << 20));
	check("ibv_dereg_mr of the 1 GiB region", ibv_dereg_mr(big_mr) == 0);
	munmap(big, GIB);

	/* ibv_rereg_mr: the same struct ibv_mr, registered again over other memory. */
	unsigned char *one = calloc(1, CHUNK), *two = calloc(1, CHUNK);
	struct ibv_mr *moved = ibv_reg_mr(pd, one, CHUNK, rw);
	check("a region to move", moved != NULL);
	if (!moved)
		return 1;
	check("ibv_rereg_mr with no flags is IBV_REREG_MR_ERR_INPUT",
	      ibv_rereg_mr(moved, 0, NULL, NULL, 0, 0) == IBV_REREG_MR_ERR_INPUT);
	void *gone = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(gone, CHUNK);
	check("ibv_rereg_mr onto unmapped memory is IBV_REREG_MR_ERR_CMD, the region kept",
	      ibv_rereg_mr(moved, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, gone, CHUNK, 0) ==
		      IBV_REREG_MR_ERR_CMD && moved->addr == (void *)one);
	check("ibv_rereg_mr asking remote write without local write is IBV_REREG_MR_ERR_CMD",
	      ibv_rereg_mr(moved, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_REMOTE_WRITE) == IBV_REREG_MR_ERR_CMD);
	check("ibv_rereg_mr onto other memory",
	      ibv_rereg_mr(moved, IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_ACCESS, pd, two,
			   CHUNK, rw) == 0 && moved->addr == (void *)two && moved->length == CHUNK);
	check("post a WRITE to the moved region's new keys",
	      post(a, IBV_WR_RDMA_WRITE, 2, src_mr, src, CHUNK, moved, 0, 0) == 0);
	wc = poll_one(cq_a);
	check("the WRITE lands in the new memory, not the old",
	      wc.status == IBV_WC_SUCCESS && wc.wr_id == 2 && filled(two, CHUNK, 0x5a) &&
	      filled(one, CHUNK, 0));
	check("ibv_dereg_mr of the moved region", ibv_dereg_mr(moved) == 0);
	free(one);
	free(two);

	/* Deregistration while WRITEs stream in: never touched after ibv_dereg_mr returns. */
	size_t len = (size_t)STREAM * CHUNK;
	unsigned char *target = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *t_mr = target == MAP_FAILED ? NULL : ibv_reg_mr(pd, target, len, rw);
	check("the streaming target registers", t_mr != NULL);
	if (!t_mr)
		return 1;
	struct ibv_mr t = *t_mr;
	int posted = 0;
	for (int i = 0; i < STREAM; i++) {
		t.addr = (char *)t_mr->addr + (size_t)i * CHUNK;
		posted += post(a, IBV_WR_RDMA_WRITE, 100 + i, src_mr, src, CHUNK, &t, 0, 0) == 0;
	}
	/* The stream is flowing once the first WRITE has completed. */
	wc = poll_one(cq_a);
	int flowing = wc.status == IBV_WC_SUCCESS && wc.wr_id == 100;
	int deregistered = ibv_dereg_mr(t_mr) == 0;
	/* From here on a write to the target by anyone kills the process. */
	int sealed = mprotect(target, len, PROT_NONE) == 0;
	check("32 WRITEs posted, the first completed, the target deregistered under the rest and sealed",
	      posted == STREAM && flowing && deregistered && sealed);
	int late = 0;
	for (int i = 0; i < STREAM; i++) {
		late += post(a, IBV_WR_RDMA_WRITE, 200 + i, src_mr, src, CHUNK, &t, 0, 0) == 0;
	}
	int ok = 1, failed = 0, after_ok = 0, rem_access = 0, total = STREAM - 1 + late;
	for (int i = 0; i < total; i++) {
		wc = poll_one(cq_a);
		if ((int)wc.status == -1)
			break;
		if (wc.status == IBV_WC_SUCCESS) {
			ok++;
			after_ok += wc.wr_id >= 200;
		} else {
			failed++;
			rem_access += wc.status == IBV_WC_REM_ACCESS_ERR;
		}
	}
	printf("streaming: %d of %d WRITEs before the deregistration succeeded, %d failed\n", ok,
	       STREAM, failed);
	check("every WRITE completes", ok + failed == total + 1);
	check("no WRITE posted after the deregistration succeeds", after_ok == 0 && late > 0);
	check("the first failure is a remote access error", rem_access == 1);
	munmap(target, len);
	printf("verbs_lent: %d failed\n", failures);
	return failures != 0;
}
